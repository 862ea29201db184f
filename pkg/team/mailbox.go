package team

import (
	"errors"
	"fmt"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

// Send delivers a message and returns it as appended (with its id and,
// for a direct message, its inbox seq). It is durable in the recipient's
// inbox when Send returns. The type decides the rules:
//
//   - message: from a member or Human to a member.
//   - broadcast: from the lead (or Human) to every teammate that is not
//     stopped, one copy each with the same id.
//   - shutdown_request: from the lead to a teammate; plan_approval_request:
//     from a teammate in plan mode to the lead (To may be left empty).
//     RequestID is made when empty; the request is logged before it is sent.
//   - the responses: from the member the request went to, back to its
//     sender, with RequestID and Approve. A response to an unknown request
//     is refused with ErrUnknownRequest, a second one with
//     ErrRequestAnswered. An approved shutdown puts the member in stopping
//     (stopped when its driver calls Finish, or at Reap after the grace);
//     an approved plan takes the member out of plan mode.
//
// A message to an unknown, stopping or stopped member is not delivered:
// Send returns a *BounceError and the sender finds a bounce in its inbox.
// Retrying a Send with the same ID (and RequestID) after a crash delivers
// it at most once; without an ID, a retry is a new message.
func (t *Team) Send(m Message) (Message, error) {
	if m.ID == "" {
		m.ID = newID("m")
	}
	m.Seq, m.Time, m.Bounced = 0, time.Time{}, nil
	if err := t.checkSender(m); err != nil {
		return m, fmt.Errorf("team %s: send %s %s from %q: %w", t.id, m.Type, m.ID, m.From, err)
	}
	switch {
	case m.Type == TypeBroadcast:
		return m, t.broadcast(m)
	case m.isRequest():
		if err := t.openRequest(&m); err != nil {
			return m, fmt.Errorf("team %s: send %s %s from %q: %w", t.id, m.Type, m.ID, m.From, err)
		}
	case m.isResponse():
		if err := t.answerRequest(m); err != nil {
			return m, fmt.Errorf("team %s: send %s %s from %q: %w", t.id, m.Type, m.ID, m.From, err)
		}
	}
	return t.deliver(m)
}

// checkSender checks the sender, type and fields that need no state.
func (t *Team) checkSender(m Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkLiveLocked(); err != nil {
		return err
	}
	if m.From != Human {
		ms, ok := t.st.members[m.From]
		if !ok {
			return fmt.Errorf("sender: %w", ErrUnknownMember)
		}
		if ms.status == StatusStopped {
			return fmt.Errorf("sender: %w", ErrMemberStopped)
		}
	}
	switch m.Type {
	case TypeMessage:
	case TypeBroadcast:
		if m.From != Human && m.From != t.st.lead {
			return ErrLeadOnly
		}
		if m.To != "" {
			return fmt.Errorf("%w: a broadcast has no recipient (to %q)", ErrInvalid, m.To)
		}
	case TypeShutdownRequest, TypePlanApprovalRequest, TypeShutdownResponse, TypePlanApprovalResponse:
		if m.From == Human {
			return fmt.Errorf("%w: the human takes part in no request protocol", ErrInvalid)
		}
		if m.isResponse() && (m.RequestID == "" || m.Approve == nil) {
			return fmt.Errorf("%w: a response needs request_id and approve", ErrInvalid)
		}
	case TypeBounce, TypeNotice:
		return fmt.Errorf("%w: type %q is the team's own", ErrInvalid, m.Type)
	default:
		return fmt.Errorf("%w: unknown message type %q", ErrInvalid, m.Type)
	}
	if m.Type != TypeBroadcast && m.Type != TypePlanApprovalRequest && m.To == "" {
		return fmt.Errorf("%w: no recipient", ErrInvalid)
	}
	return nil
}

// broadcast delivers a copy to every teammate that can still read it.
func (t *Team) broadcast(m Message) error {
	t.mu.Lock()
	var to []string
	for _, name := range t.st.order {
		st := t.st.members[name].status
		if name != m.From && st != StatusStopped && st != StatusStopping {
			to = append(to, name)
		}
	}
	t.mu.Unlock()
	var errs []error
	for _, name := range to {
		c := m
		c.To = name
		if _, err := t.deliver(c); err != nil && !errors.As(err, new(*BounceError)) {
			// A teammate that stopped meanwhile had its bounce; anything
			// else is a failure to report.
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deliver appends m to its recipient's inbox unless the id is there
// already, or bounces it.
func (t *Team) deliver(m Message) (Message, error) {
	t.mu.Lock()
	mb := t.members[m.To]
	_, known := t.st.members[m.To]
	t.mu.Unlock()
	if mb == nil || !known {
		return m, t.bounce(m, ErrUnknownMember, fmt.Sprintf("team %s has no member %q", t.id, m.To))
	}
	mb.inboxMu.Lock()
	t.mu.Lock()
	ms := t.st.members[m.To]
	status, reason := ms.status, ms.reason
	t.mu.Unlock()
	system := m.From == System
	if !system && (status == StatusStopped || status == StatusStopping) {
		mb.inboxMu.Unlock()
		return m, t.bounce(m, ErrMemberStopped, fmt.Sprintf("%s is %s (%s)", m.To, status, reason))
	}
	if seq, dup := mb.ids[m.ID]; dup {
		mb.inboxMu.Unlock()
		m.Seq = seq
		return m, nil
	}
	evs, err := mb.inbox.Append(m)
	if err == nil {
		mb.ids[m.ID] = evs[0].Seq
		m.Seq, m.Time = evs[0].Seq, evs[0].Time
	}
	mb.inboxMu.Unlock()
	if err != nil {
		return m, fmt.Errorf("team %s: deliver %s to %s: %w", t.id, m.ID, m.To, err)
	}
	t.mu.Lock()
	if !system || status != StatusStopped {
		t.queueLocked(mb)
	}
	t.bumpLocked()
	t.mu.Unlock()
	t.parkIdle(mb)
	return m, nil
}

// bounce sends m back to its sender with the reason, and returns the
// BounceError for Send. Human senders get only the error. A bounce's id
// is derived from the message's, so a retried send bounces once.
func (t *Team) bounce(m Message, cause error, reason string) error {
	berr := &BounceError{To: m.To, Reason: reason, Err: cause}
	if m.From == Human || m.From == System {
		return berr
	}
	orig := m
	b := Message{ID: "bounce:" + m.ID + ":" + m.To, Type: TypeBounce, From: System, To: m.From,
		Content: fmt.Sprintf("your %s %s to %s was not delivered: %s", m.Type, m.ID, m.To, reason), Bounced: &orig}
	if _, err := t.deliver(b); err != nil {
		return errors.Join(berr, fmt.Errorf("bounce to %s: %w", m.From, err))
	}
	return berr
}

// bounceUnread sends a stopped member's unread messages back to their
// senders and marks them consumed (as bounced) in its log. It holds the
// member's consume lock throughout, so a message is either consumed by
// the member or bounced, never both. Safe to repeat: bounce ids are
// derived from the message ids.
func (t *Team) bounceUnread(name string) error {
	t.mu.Lock()
	mb := t.members[name]
	reason := t.st.members[name].reason
	t.mu.Unlock()
	mb.consumeMu.Lock()
	defer mb.consumeMu.Unlock()
	msgs, err := t.Inbox(name, 0)
	if err != nil || len(msgs) == 0 {
		return err
	}
	var errs []error
	for _, m := range msgs {
		if m.From == System {
			continue // a bounce or notice to a stopped member stays where it is, unread
		}
		err := t.bounce(m, ErrMemberStopped, fmt.Sprintf("%s stopped (%s) before reading it", name, reason))
		if !errors.As(err, new(*BounceError)) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return t.consumeLocked(mb, msgs, true)
}

// Inbox returns up to max of a member's unconsumed messages (all when max
// <= 0), oldest first. Reading does not consume: the messages stay until
// the member's loop has logged them with Consume, so a loop that dies
// after Inbox gets them again.
func (t *Team) Inbox(name string, max int) ([]Message, error) {
	t.mu.Lock()
	mb := t.members[name]
	var cursor uint64
	if mb != nil {
		cursor = mb.cursor
	}
	t.mu.Unlock()
	if mb == nil {
		return nil, fmt.Errorf("team %s: inbox of %q: %w", t.id, name, ErrUnknownMember)
	}
	msgs, err := readInbox(mb.inbox, cursor, max)
	if err != nil {
		return msgs, fmt.Errorf("team %s: inbox of %s: %w", t.id, name, err)
	}
	return msgs, nil
}

// readInbox reads up to max messages (all when max <= 0) after seq after.
func readInbox(l *runs.Log, after uint64, max int) ([]Message, error) {
	var out []Message
	for max <= 0 || len(out) < max {
		evs, _, err := l.Read(after, 64<<10)
		if err != nil && !errors.Is(err, runs.ErrClosed) {
			return out, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			m, err := runs.Decode[Message](ev)
			if err != nil {
				return out, err
			}
			m.Seq, m.Time = ev.Seq, ev.Time
			out = append(out, m)
			if max > 0 && len(out) == max {
				break
			}
		}
		after = evs[len(evs)-1].Seq
	}
	return out, nil
}

// Consume logs, in the member's own log, that its loop took these
// messages, and only then moves the inbox past them: the one step that
// makes delivery exactly-once for the loop. msgs must be the next
// unconsumed messages in inbox order (a prefix of what Inbox returned).
// extra payloads (the driver's record of what it made of them, such as
// the user turn it adds to the conversation) go into the same batch, so
// the consumption and its effect are durable together or not at all.
func (t *Team) Consume(name string, msgs []Message, extra ...runs.Payload) error {
	return t.consume(name, msgs, extra...)
}

func (t *Team) consume(name string, msgs []Message, extra ...runs.Payload) error {
	if len(msgs) == 0 && len(extra) == 0 {
		return nil
	}
	t.mu.Lock()
	mb := t.members[name]
	t.mu.Unlock()
	if mb == nil {
		return fmt.Errorf("team %s: consume for %q: %w", t.id, name, ErrUnknownMember)
	}
	mb.consumeMu.Lock()
	defer mb.consumeMu.Unlock()
	// A stopped member's unread mail goes back to its senders; a loop
	// that outlived its stop (reaped after its grace) may not take it too.
	t.mu.Lock()
	ms := t.st.members[name]
	stopped := ms != nil && ms.status == StatusStopped
	t.mu.Unlock()
	if stopped {
		return fmt.Errorf("team %s: consume for %s: %w", t.id, name, ErrMemberStopped)
	}
	return t.consumeLocked(mb, msgs, false, extra...)
}

// consumeLocked logs the consumption and moves the cursor. mb.consumeMu held.
func (t *Team) consumeLocked(mb *member, msgs []Message, bounced bool, extra ...runs.Payload) error {
	name := mb.name
	t.mu.Lock()
	cursor := mb.cursor
	t.mu.Unlock()
	ids := make([]string, len(msgs))
	mb.inboxMu.Lock()
	for i, m := range msgs {
		if want := cursor + uint64(i) + 1; m.Seq != want || mb.ids[m.ID] != want {
			mb.inboxMu.Unlock()
			return fmt.Errorf("team %s: consume %s (seq %d) for %s: %w: the next unconsumed message is seq %d", t.id, m.ID, m.Seq, name, ErrOutOfOrder, want)
		}
		ids[i] = m.ID
	}
	mb.inboxMu.Unlock()
	ps := extra
	through := cursor
	if len(msgs) > 0 {
		through = msgs[len(msgs)-1].Seq
		ps = append([]runs.Payload{consumed{IDs: ids, Through: through, Bounced: bounced}}, extra...)
	}
	if _, err := mb.own.Append(ps...); err != nil {
		return fmt.Errorf("team %s: consume for %s: %w", t.id, name, err)
	}
	t.mu.Lock()
	mb.cursor = through
	if t.depthLocked(mb) == 0 {
		t.unqueueLocked(mb)
	}
	t.bumpLocked()
	t.mu.Unlock()
	t.parkIdle(mb)
	return nil
}

// Events returns a member's own log after seq after: what it consumed and
// whatever its driver recorded (its conversation), to rebuild its context
// on resume.
func (t *Team) Events(name string, after uint64) ([]runs.Event, error) {
	t.mu.Lock()
	mb := t.members[name]
	t.mu.Unlock()
	if mb == nil {
		return nil, fmt.Errorf("team %s: events of %q: %w", t.id, name, ErrUnknownMember)
	}
	var out []runs.Event
	for {
		evs, _, err := mb.own.Read(after, 0)
		if err != nil && !errors.Is(err, runs.ErrClosed) {
			return out, fmt.Errorf("team %s: events of %s: %w", t.id, name, err)
		}
		if len(evs) == 0 {
			return out, nil
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].Seq
	}
}

// queueLocked marks a member as having work for a driver and signals. t.mu held.
func (t *Team) queueLocked(mb *member) {
	if mb.queued || mb.running {
		return
	}
	mb.queued = true
	t.ready = append(t.ready, mb.name)
	for _, c := range []chan struct{}{t.signal, t.storeSignal} {
		select {
		case c <- struct{}{}:
		default: // a signal is pending already: bursts merge
		}
	}
}

func (t *Team) unqueueLocked(mb *member) {
	if !mb.queued {
		return
	}
	mb.queued = false
	for i, n := range t.ready {
		if n == mb.name {
			t.ready = append(t.ready[:i], t.ready[i+1:]...)
			break
		}
	}
}

// Ready is signalled (capacity 1, so bursts merge into one signal) when a
// member gets work: a driver with a bounded worker pool waits on it and
// then calls Take until it reports nothing. One channel serves the whole
// team, so an idle member costs no goroutine.
func (t *Team) Ready() <-chan struct{} { return t.signal }

// Take hands the driver the member that has waited longest with
// unconsumed messages, and marks it active until Release. ok is false
// when no member has work.
func (t *Team) Take() (name string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.ready) > 0 {
		name, t.ready = t.ready[0], t.ready[1:]
		mb := t.members[name]
		mb.queued = false
		if t.st.members[name].status == StatusStopped || t.depthLocked(mb) == 0 && !mb.resume {
			continue
		}
		mb.running, mb.resume = true, false
		t.bumpLocked()
		return name, true
	}
	return "", false
}

// Release ends a member's turn: it is idle again and its files are parked.
// Messages that came during the turn queue it again at once.
func (t *Team) Release(name string) {
	t.mu.Lock()
	mb := t.members[name]
	if mb == nil || !mb.running {
		t.mu.Unlock()
		return
	}
	mb.running = false
	if t.depthLocked(mb) > 0 && t.st.members[name].status != StatusStopped {
		t.queueLocked(mb)
	}
	t.bumpLocked()
	t.mu.Unlock()
	t.parkIdle(mb)
}

// parkIdle lets go of an idle member's descriptors. A park error is only
// logged: the next append reopens the file and reports any real problem.
func (t *Team) parkIdle(mb *member) {
	t.mu.Lock()
	running := mb.running
	t.mu.Unlock()
	if running {
		return
	}
	if err := errors.Join(mb.inbox.Park(), mb.own.Park()); err != nil {
		t.logger.Warn("park an idle member's files", "team", t.id, "member", mb.name, "err", err)
	}
}

// History reads a member's inbox after seq after, consumed or not: what
// the API shows of a conversation, and a follower's resume point.
func (t *Team) History(name string, after uint64) ([]Message, error) {
	t.mu.Lock()
	mb := t.members[name]
	t.mu.Unlock()
	if mb == nil {
		return nil, fmt.Errorf("team %s: inbox of %q: %w", t.id, name, ErrUnknownMember)
	}
	msgs, err := readInbox(mb.inbox, after, 0)
	if err != nil {
		return msgs, fmt.Errorf("team %s: inbox of %s: %w", t.id, name, err)
	}
	return msgs, nil
}

func decodeConsumed(ev runs.Event) (consumed, error) { return runs.Decode[consumed](ev) }
