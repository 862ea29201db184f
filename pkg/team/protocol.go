package team

import (
	"fmt"
	"time"
)

// openRequest logs a shutdown or plan approval request before it is sent,
// after checking who may make it. A retry of the same request (same
// request id and message id) passes, so a crashed send can be repeated.
func (t *Team) openRequest(m *Message) error {
	if m.RequestID == "" {
		m.RequestID = newID("r")
	}
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	st := &t.st
	switch m.Type {
	case TypeShutdownRequest:
		if m.From != st.lead {
			t.mu.Unlock()
			return ErrLeadOnly
		}
		if m.To == st.lead {
			t.mu.Unlock()
			return fmt.Errorf("%w: the lead is not shut down by request; stop the team", ErrInvalid)
		}
		if ms := st.members[m.To]; ms == nil || ms.status == StatusStopped || ms.status == StatusStopping {
			// Nobody to answer: log no request that would stay pending
			// for ever; the delivery bounces with the reason.
			t.mu.Unlock()
			return nil
		}
	case TypePlanApprovalRequest:
		if m.To == "" {
			m.To = st.lead
		}
		if m.To != st.lead {
			t.mu.Unlock()
			return fmt.Errorf("%w: a plan goes to the lead %q, not %q", ErrInvalid, st.lead, m.To)
		}
		if ms := st.members[m.From]; ms.status != StatusPlanMode {
			t.mu.Unlock()
			return fmt.Errorf("%s is %s: %w", m.From, ms.status, ErrNotInPlanMode)
		}
	}
	r, exists := st.requests[m.RequestID]
	t.mu.Unlock()
	if exists {
		if r.made.MsgID == m.ID && r.made.Type == m.Type && r.made.From == m.From && r.made.To == m.To {
			return nil // the same request again: a retry
		}
		return fmt.Errorf("request %s: %w", m.RequestID, ErrRequestExists)
	}
	return t.appendLocked(requestMade{ID: m.RequestID, Type: m.Type, From: m.From, To: m.To, MsgID: m.ID})
}

// answerRequest enforces the request's state machine (pending → answered,
// once, by its addressee) and logs the answer with its effect before the
// response is delivered.
func (t *Team) answerRequest(m Message) error {
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	r, ok := t.st.requests[m.RequestID]
	grace := t.st.grace
	// The member the request is about: the one asked to shut down, or
	// the one asking to leave plan mode.
	var status Status
	if ok {
		subject := r.made.To
		if r.made.Type == TypePlanApprovalRequest {
			subject = r.made.From
		}
		status = t.st.members[subject].status
	}
	t.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("request %q: %w", m.RequestID, ErrUnknownRequest)
	case r.made.To != m.From || r.made.From != m.To || responseTo(r.made.Type) != m.Type:
		return fmt.Errorf("request %s is a %s from %s to %s: %w", m.RequestID, r.made.Type, r.made.From, r.made.To, ErrNotAddressee)
	case r.answered != nil:
		if r.answered.MsgID == m.ID && r.answered.Approve == *m.Approve {
			return nil // the same response again: a retry
		}
		return fmt.Errorf("request %s (answered by %s): %w", m.RequestID, r.answered.By, ErrRequestAnswered)
	}
	ans := requestAnswered{ID: m.RequestID, Approve: *m.Approve, By: m.From, MsgID: m.ID}
	if !*m.Approve {
		return t.appendLocked(ans)
	}
	switch r.made.Type {
	case TypeShutdownRequest:
		if status == StatusStopped || status == StatusStopping {
			return t.appendLocked(ans)
		}
		return t.appendLocked(ans, statusChanged{Member: m.From, Status: StatusStopping,
			Reason: ReasonShutdown, Until: t.now().UTC().Add(grace)})
	default: // plan approval: the requester leaves plan mode
		if status != StatusPlanMode {
			return t.appendLocked(ans)
		}
		return t.appendLocked(ans, statusChanged{Member: r.made.From, Status: StatusActive})
	}
}

// Request is a protocol request and where it stands.
type Request struct {
	ID       string      `json:"id"`
	Type     MessageType `json:"type"`
	From     string      `json:"from"`
	To       string      `json:"to"`
	Answered bool        `json:"answered"`
	Approve  bool        `json:"approve,omitempty"`
}

// Request returns a request's state, for a driver that resumes a loop
// waiting on one.
func (t *Team) Request(id string) (Request, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.st.requests[id]
	if !ok {
		return Request{}, fmt.Errorf("team %s: request %q: %w", t.id, id, ErrUnknownRequest)
	}
	out := Request{ID: id, Type: r.made.Type, From: r.made.From, To: r.made.To, Answered: r.answered != nil}
	if r.answered != nil {
		out.Approve = r.answered.Approve
	}
	return out, nil
}

// Finish is the driver saying a stopping member's loop has ended: the
// member is stopped now rather than at the end of its grace. A member
// that is not stopping is left as it is.
func (t *Team) Finish(name string) error {
	t.mu.Lock()
	ms, ok := t.st.members[name]
	stopping := ok && ms.status == StatusStopping
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("team %s: finish %q: %w", t.id, name, ErrUnknownMember)
	}
	if !stopping {
		return nil
	}
	return t.stopMember(name, ReasonShutdown, "")
}

// Reap stops the stopping members whose grace has run out and returns
// their names, so the driver cancels what they still run. A driver calls
// it at NextDeadline; nothing in the package runs a timer.
func (t *Team) Reap() ([]string, error) {
	now := t.now()
	t.mu.Lock()
	var due []string
	for _, name := range t.st.order {
		if ms := t.st.members[name]; ms.status == StatusStopping && !now.Before(ms.until) {
			due = append(due, name)
		}
	}
	t.mu.Unlock()
	for _, name := range due {
		if err := t.stopMember(name, ReasonShutdown, "grace ran out"); err != nil {
			return due, err
		}
	}
	return due, nil
}

// NextDeadline is when Reap next has something to do: the earliest end of
// a stopping member's grace. ok is false when no member is stopping.
func (t *Team) NextDeadline() (at time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ms := range t.st.members {
		if ms.status == StatusStopping && (!ok || ms.until.Before(at)) {
			at, ok = ms.until, true
		}
	}
	return at, ok
}
