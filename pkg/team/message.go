package team

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

// MessageType says what a message is for. The request and response types
// carry a request id whose state the team enforces.
type MessageType string

// The message types. Bounce and Notice come only from System.
const (
	TypeMessage              MessageType = "message"
	TypeBroadcast            MessageType = "broadcast" // lead only; one copy to every live teammate
	TypeShutdownRequest      MessageType = "shutdown_request"
	TypeShutdownResponse     MessageType = "shutdown_response"
	TypePlanApprovalRequest  MessageType = "plan_approval_request"
	TypePlanApprovalResponse MessageType = "plan_approval_response"
	TypeBounce               MessageType = "bounce" // a message that could not be delivered, back to its sender
	TypeNotice               MessageType = "notice" // the team tells a member something (a budget spent)
)

// Senders that are not members. Member names may not take them.
const (
	// Human is the operator (the API, the CLI): it may send messages to
	// anyone and do what the lead may do.
	Human = "human"
	// System signs bounces and notices.
	System = "system"
)

// Message is one line of an inbox: a team.message record in
// <team>/inbox/<member>.jsonl.
type Message struct {
	// ID is unique within an inbox. A sender that sets it may retry a send
	// after a crash: an id already in the inbox is not appended again.
	// Send makes one when it is empty.
	ID        string      `json:"id"`
	Type      MessageType `json:"type"`
	From      string      `json:"from"`
	To        string      `json:"to,omitempty"` // empty for a broadcast as sent
	Content   string      `json:"content,omitempty"`
	RequestID string      `json:"request_id,omitempty"` // requests and responses
	Approve   *bool       `json:"approve,omitempty"`    // responses
	Bounced   *Message    `json:"bounced,omitempty"`    // a bounce: the message that came back

	Seq  uint64    `json:"-"` // its inbox seq, set when read or sent
	Time time.Time `json:"-"` // when it was appended
}

// Kind makes a Message a runs payload.
func (Message) Kind() runs.Kind { return "team.message" }

func (m Message) isRequest() bool {
	return m.Type == TypeShutdownRequest || m.Type == TypePlanApprovalRequest
}

func (m Message) isResponse() bool {
	return m.Type == TypeShutdownResponse || m.Type == TypePlanApprovalResponse
}

// responseTo is the response type that answers a request type.
func responseTo(t MessageType) MessageType {
	if t == TypeShutdownRequest {
		return TypeShutdownResponse
	}
	return TypePlanApprovalResponse
}

// consumed is a member log record: the loop took these messages from its
// inbox, which now starts after seq Through.
type consumed struct {
	IDs     []string `json:"ids"`
	Through uint64   `json:"through"`
	Bounced bool     `json:"bounced,omitempty"` // sent back unread: the member stopped
}

func (consumed) Kind() runs.Kind { return "team.consumed" }

// newID returns a random id with a prefix: "m-3f9a1c0b2d4e".
func newID(prefix string) string {
	var r [6]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	return prefix + "-" + hex.EncodeToString(r[:])
}

// validName reports whether s can be a team id or member name: the
// skill-name rule, so it is safe as a file name.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	prev := byte('a')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' || c == '_':
			if prev == '-' || prev == '_' {
				return false
			}
		default:
			return false
		}
		prev = c
	}
	return prev != '-' && prev != '_'
}

func checkName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("%w %s %q: want lowercase letters and digits, words joined by - or _", ErrInvalid, what, s)
	}
	return nil
}
