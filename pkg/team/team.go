package team

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

// Team is one team: its log, its members' inboxes and logs, and the state
// folded from them. Its methods are safe for concurrent use. Every method
// that acts for someone takes that someone's name first, so the rules of
// the tool table (lead-only operations) are checked here, not in a face.
type Team struct {
	id     string
	dir    string
	now    func() time.Time
	logger *slog.Logger
	log    *runs.Log // team.jsonl: always open, so its lock keeps a second daemon out of the whole team

	// Lock order: member.inboxMu, then appendMu, then mu.
	appendMu    sync.Mutex // serializes check, append and fold on the team log
	mu          sync.Mutex // guards the fields below (st is written under appendMu too)
	st          state
	members     map[string]*member
	ready       []string      // members with unconsumed messages, not running, in the order they got work
	signal      chan struct{} // capacity 1: a member became ready (bursts merge)
	storeSignal chan struct{} // the store's Ready channel, signalled alongside
	changed     chan struct{} // closed and replaced on every change: what waiters select on
	closed      bool
}

// member is what the team holds in memory for a member's mail.
type member struct {
	name string

	inboxMu sync.Mutex        // serializes the status check and append of a delivery, and guards ids
	inbox   *runs.Log         // <team>/inbox/<name>.jsonl
	ids     map[string]uint64 // message id → inbox seq, for de-duplication

	consumeMu sync.Mutex // serializes Consume
	own       *runs.Log  // <team>/members/<name>.jsonl

	// guarded by Team.mu
	cursor  uint64 // inbox seq of the last consumed message
	running bool   // between Take and Release
	queued  bool   // in Team.ready
	resume  bool   // its last turn is open (the daemon stopped in it): Take hands it out without mail
}

func (t *Team) repaired(l *runs.Log) {
	if rep := l.Repaired(); rep != nil {
		t.logger.Warn("cut a torn tail from a team log", "team", t.id, "file", l.Path(),
			"offset", rep.Offset, "bytes", rep.Cut, "reason", rep.Reason)
	}
}

// openMember opens (creating) a member's inbox and log, replays them, and
// parks both: an idle member holds no descriptor.
func (t *Team) openMember(name string) error {
	mb := &member{name: name, ids: map[string]uint64{}}
	inbox, err := runs.OpenLog(filepath.Join(t.dir, "inbox", name+".jsonl"), runs.LogOptions{Now: t.now,
		Replay: func(ev runs.Event) error {
			m, err := runs.Decode[Message](ev)
			if err != nil {
				return err
			}
			mb.ids[m.ID] = ev.Seq
			return nil
		}})
	if err != nil {
		return fmt.Errorf("member %s: inbox: %w", name, err)
	}
	t.repaired(inbox)
	own, err := runs.OpenLog(filepath.Join(t.dir, "members", name+".jsonl"), runs.LogOptions{Now: t.now,
		Replay: func(ev runs.Event) error {
			if ev.Kind != (consumed{}).Kind() {
				return nil // the driver's own records
			}
			c, err := runs.Decode[consumed](ev)
			if err != nil {
				return err
			}
			mb.cursor = max(mb.cursor, c.Through)
			return nil
		}})
	if err != nil {
		inbox.Close()
		return fmt.Errorf("member %s: log: %w", name, err)
	}
	t.repaired(own)
	mb.inbox, mb.own = inbox, own
	if err := errors.Join(inbox.Park(), own.Park()); err != nil {
		inbox.Close()
		own.Close()
		return fmt.Errorf("member %s: %w", name, err)
	}
	t.mu.Lock()
	t.members[name] = mb
	t.mu.Unlock()
	return nil
}

// close closes the team's files and wakes waiters.
func (t *Team) close() error {
	t.mu.Lock()
	t.closed = true
	mbs := make([]*member, 0, len(t.members))
	for _, mb := range t.members {
		mbs = append(mbs, mb)
	}
	t.bumpLocked()
	t.mu.Unlock()
	errs := []error{t.log.Close()}
	for _, mb := range mbs {
		errs = append(errs, mb.inbox.Close(), mb.own.Close())
	}
	return errors.Join(errs...)
}

// ID is the team's id.
func (t *Team) ID() string { return t.id }

// Dir is the team's folder.
func (t *Team) Dir() string { return t.dir }

// Lead is the lead's name.
func (t *Team) Lead() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st.lead
}

// append checks nothing: it appends the payloads to the team log as one
// batch and folds them. t.appendMu must be held by the caller, who checked.
func (t *Team) appendLocked(ps ...runs.Payload) error {
	evs, err := t.log.Append(ps...)
	if err != nil {
		return fmt.Errorf("team %s: %w", t.id, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ev := range evs {
		if err := t.st.apply(ps[i], ev.Time); err != nil {
			return fmt.Errorf("team %s: fold event %d: %w", t.id, ev.Seq, err)
		}
	}
	t.bumpLocked()
	return nil
}

func (t *Team) append(ps ...runs.Payload) error {
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	return t.appendLocked(ps...)
}

// bumpLocked wakes every waiter. t.mu held.
func (t *Team) bumpLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// checkLive refuses work on a stopped or closed team. t.mu held.
func (t *Team) checkLiveLocked() error {
	switch {
	case t.closed:
		return fmt.Errorf("team %s: %w", t.id, ErrClosed)
	case t.st.stopped:
		return fmt.Errorf("team %s: %w (%s)", t.id, ErrTeamStopped, t.st.stopReason)
	}
	return nil
}

// checkLeadLocked refuses an operation of the lead's to anyone else. t.mu held.
func (t *Team) checkLeadLocked(by, what string) error {
	if err := t.checkLiveLocked(); err != nil {
		return err
	}
	if by == Human || by == t.st.lead {
		return nil
	}
	if _, ok := t.st.members[by]; !ok {
		return fmt.Errorf("team %s: %s by %q: %w", t.id, what, by, ErrUnknownMember)
	}
	return fmt.Errorf("team %s: %s by %q: %w", t.id, what, by, ErrLeadOnly)
}

// Spawn adds a teammate. Only the lead (or Human) may.
func (t *Team) Spawn(by string, spec MemberSpec) (Member, error) {
	if err := checkMemberName(spec.Name); err != nil {
		return Member{}, fmt.Errorf("team %s: spawn: %w", t.id, err)
	}
	if spec.Budget < 0 {
		return Member{}, fmt.Errorf("team %s: spawn %s: %w: negative budget", t.id, spec.Name, ErrInvalid)
	}
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	err := t.checkLeadLocked(by, "spawn")
	if _, ok := t.st.members[spec.Name]; ok && err == nil {
		err = fmt.Errorf("team %s: spawn %s: %w", t.id, spec.Name, ErrMemberExists)
	}
	_, opened := t.members[spec.Name]
	t.mu.Unlock()
	if err != nil {
		return Member{}, err
	}
	// The files first: a crash before the spawn record leaves empty files
	// that a later spawn of the name takes over.
	if !opened {
		if err := t.openMember(spec.Name); err != nil {
			return Member{}, fmt.Errorf("team %s: spawn: %w", t.id, err)
		}
	}
	if err := t.appendLocked(spawned{MemberSpec: spec, By: by}); err != nil {
		return Member{}, err
	}
	return t.Member(spec.Name)
}

// Member returns one member as it stands.
func (t *Team) Member(name string) (Member, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms, ok := t.st.members[name]
	if !ok {
		return Member{}, fmt.Errorf("team %s: member %q: %w", t.id, name, ErrUnknownMember)
	}
	return t.memberLocked(name, ms), nil
}

func (t *Team) memberLocked(name string, ms *memberState) Member {
	m := Member{MemberSpec: ms.spec, Lead: ms.lead, Status: ms.status, Reason: ms.reason, Detail: ms.detail,
		StopBy: ms.until, TokensUsed: ms.used, CurrentTask: ms.task}
	if mb := t.members[name]; mb != nil {
		m.InboxDepth = t.depthLocked(mb)
		if m.Status == StatusActive && !mb.running {
			m.Status = StatusIdle
		}
	}
	return m
}

// depthLocked is how many messages a member has not consumed. t.mu held.
func (t *Team) depthLocked(mb *member) int {
	return int(mb.inbox.LastSeq() - mb.cursor)
}

// Members lists every member, the lead first, for the API and the console.
func (t *Team) Members() []Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Member, 0, len(t.st.order))
	for _, name := range t.st.order {
		out = append(out, t.memberLocked(name, t.st.members[name]))
	}
	return out
}

// List is the lead's list_teammates: Members, refused to anyone else.
func (t *Team) List(by string) ([]Member, error) {
	t.mu.Lock()
	err := t.checkLeadLocked(by, "list")
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t.Members(), nil
}

// Summary is the team at a glance.
type Summary struct {
	ID         string   `json:"id"`
	Lead       string   `json:"lead"`
	Budget     int64    `json:"budget,omitempty"`
	TokensUsed int64    `json:"tokens_used"`
	Stopped    bool     `json:"stopped,omitempty"`
	StopReason string   `json:"stop_reason,omitempty"`
	Members    []Member `json:"members"`
}

// Summary returns the team with its members.
func (t *Team) Summary() Summary {
	ms := t.Members()
	t.mu.Lock()
	defer t.mu.Unlock()
	return Summary{ID: t.id, Lead: t.st.lead, Budget: t.st.budget, TokensUsed: t.st.used,
		Stopped: t.st.stopped, StopReason: t.st.stopReason, Members: ms}
}

// Stop stops the whole team: every member stops (their unread mail goes
// back to its senders) and nothing more may happen in it.
func (t *Team) Stop(by, reason string) error {
	t.mu.Lock()
	err := t.checkLeadLocked(by, "stop the team")
	names := slices.Clone(t.st.order)
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if reason == "" {
		reason = "stopped by " + by
	}
	for _, name := range names {
		if err := t.stopMember(name, ReasonTeamStopped, reason); err != nil {
			return err
		}
	}
	return t.append(teamStopped{Reason: reason})
}

// stopMember logs a member's stop (unless it is stopped already) and then
// sends its unread mail back. The member's inbox lock is held across the
// status change, so no delivery slips in between the check and the stop.
func (t *Team) stopMember(name, reason, detail string) error {
	t.mu.Lock()
	mb := t.members[name]
	t.mu.Unlock()
	if mb == nil {
		return fmt.Errorf("team %s: stop %q: %w", t.id, name, ErrUnknownMember)
	}
	mb.inboxMu.Lock()
	t.appendMu.Lock()
	t.mu.Lock()
	already := t.st.members[name].status == StatusStopped
	t.mu.Unlock()
	var err error
	if !already {
		err = t.appendLocked(statusChanged{Member: name, Status: StatusStopped, Reason: reason, Detail: detail})
	}
	t.appendMu.Unlock()
	mb.inboxMu.Unlock()
	if err != nil {
		return err
	}
	return t.bounceUnread(name)
}

// ReadEvents reads the team log after seq after (at most maxBytes of it,
// but always one record; no limit when maxBytes <= 0), and returns a
// channel closed at the next change: the resumable event stream behind
// the API's SSE, where seq is the event id.
func (t *Team) ReadEvents(after uint64, maxBytes int) ([]runs.Event, <-chan struct{}, error) {
	evs, changed, err := t.log.Read(after, maxBytes)
	if err != nil {
		err = fmt.Errorf("team %s: %w", t.id, err)
	}
	return evs, changed, err
}
