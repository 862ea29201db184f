package team

import (
	"fmt"
	"slices"
	"time"
)

// Status is where a member stands. Active and idle are the same stored
// state (a member not stopped and not in plan mode): a member is active
// while a driver runs its loop (between Take and Release), idle otherwise.
type Status string

// The member statuses.
const (
	StatusActive   Status = "active"
	StatusIdle     Status = "idle"
	StatusPlanMode Status = "plan_mode" // read-only tools until the lead approves a plan
	StatusStopping Status = "stopping"  // a shutdown was approved; stopped at the latest after the grace
	StatusStopped  Status = "stopped"
)

// Stop reasons a member's Reason may hold.
const (
	ReasonShutdown       = "shutdown"        // it approved a shutdown request
	ReasonBudgetExceeded = "budget_exceeded" // it (or the team) spent its token budget
	ReasonTeamStopped    = "team_stopped"    // the whole team was stopped
)

// DefaultGrace is how long an approved shutdown leaves a member to finish
// its turn before it is stopped.
const DefaultGrace = 30 * time.Second

// MemberSpec is what a member is spawned with.
type MemberSpec struct {
	Name     string `json:"name"`
	Role     string `json:"role,omitempty"`    // what it is for, in a word or a line ("frontend")
	Profile  string `json:"profile,omitempty"` // the agent profile its loop runs (prompt, tools)
	Budget   int64  `json:"budget,omitempty"`  // tokens; 0 means no budget of its own
	PlanMode bool   `json:"plan_mode,omitempty"`
}

// Member is a member as the team sees it now.
type Member struct {
	MemberSpec
	Lead        bool      `json:"lead,omitempty"`
	Status      Status    `json:"status"`
	Reason      string    `json:"reason,omitempty"` // why it is stopping or stopped: shutdown, budget_exceeded, team_stopped
	Detail      string    `json:"detail,omitempty"` // more, for a person
	StopBy      time.Time `json:"stop_by,omitzero"` // stopping: when it is stopped at the latest
	TokensUsed  int64     `json:"tokens_used"`      // over the team's life
	CurrentTask string    `json:"current_task,omitempty"`
	InboxDepth  int       `json:"inbox_depth"` // messages not consumed yet
}

// ReadOnly reports whether the member may use only read-only tools: it is
// in plan mode and the lead has not approved its plan yet.
func (m Member) ReadOnly() bool { return m.Status == StatusPlanMode }

// Tools the team gives its members' loops. The lead alone has the first
// three, as in the pattern's tool table; everyone may send and read.
const (
	ToolSpawn     = "spawn_teammate"
	ToolList      = "list_teammates"
	ToolBroadcast = "broadcast"
	ToolSend      = "send_message"
	ToolRead      = "read_inbox"
)

var leadTools = []string{ToolSpawn, ToolList, ToolBroadcast}

// ToolsAllowed filters the tool names a member's loop may offer its
// model: the lead-only team tools for the lead alone, nothing for a
// stopped member, and in plan mode only the tools readOnly says are
// read-only (the team's send and read tools stay: a member in plan mode
// must be able to ask for approval).
func (m Member) ToolsAllowed(tools []string, readOnly func(tool string) bool) []string {
	if m.Status == StatusStopped {
		return nil
	}
	var out []string
	for _, t := range tools {
		switch {
		case slices.Contains(leadTools, t):
			if !m.Lead {
				continue
			}
		case t == ToolSend || t == ToolRead:
		case m.ReadOnly() && (readOnly == nil || !readOnly(t)):
			continue
		}
		out = append(out, t)
	}
	return out
}

func checkMemberName(name string) error {
	if name == Human || name == System {
		return fmt.Errorf("%w member name %q: reserved", ErrInvalid, name)
	}
	return checkName("member name", name)
}
