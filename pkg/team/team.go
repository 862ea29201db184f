package team

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
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

// Config says where a Store keeps its teams. Only Dir is required.
type Config struct {
	// Dir is the daemon's state folder; teams live in Dir/teams/<id>/.
	Dir string
	// Now is the clock for leases, grace periods and record times;
	// time.Now when nil.
	Now func() time.Time
	// Logger reports repairs (a torn tail cut on open). Discarded when nil.
	Logger *slog.Logger
}

// Store is the set of teams under a state folder. It loads a team the
// first time it is asked for and keeps it; it runs no goroutine.
type Store struct {
	dir    string
	now    func() time.Time
	logger *slog.Logger

	mu     sync.Mutex // guards teams and closed
	teams  map[string]*Team
	closed bool
}

// Open returns the store for cfg.Dir, creating Dir/teams if needed.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("team: no state folder (Config.Dir)")
	}
	dir := filepath.Join(cfg.Dir, "teams")
	if err := mkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("team: %w", err)
	}
	s := &Store{dir: dir, now: cfg.Now, logger: cfg.Logger, teams: map[string]*Team{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Spec is what a team is created with.
type Spec struct {
	ID     string     // a name: lowercase words joined by - or _
	Lead   MemberSpec // the lead's Budget is its own; Budget below is the team's
	Budget int64      // tokens for the whole team; 0 means none
	Grace  time.Duration
}

// Create makes a new team with its lead, on disk before it returns.
func (s *Store) Create(spec Spec) (*Team, error) {
	errs := []error{checkName("team id", spec.ID), checkMemberName(spec.Lead.Name)}
	if spec.Budget < 0 || spec.Lead.Budget < 0 || spec.Grace < 0 {
		errs = append(errs, fmt.Errorf("%w: budgets and grace must not be negative", ErrInvalid))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("create team: %w", err)
	}
	if spec.Grace == 0 {
		spec.Grace = DefaultGrace
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("create team %s: store %w", spec.ID, ErrClosed)
	}
	dir := filepath.Join(s.dir, spec.ID)
	if _, ok := s.teams[spec.ID]; ok {
		return nil, fmt.Errorf("create team %s: %w", spec.ID, ErrTeamExists)
	}
	// A folder left by a Create cut short (no first record) is taken over.
	switch t, err := s.load(spec.ID); {
	case err == nil:
		t.close()
		return nil, fmt.Errorf("create team %s: %w", spec.ID, ErrTeamExists)
	case !errors.Is(err, ErrUnknownTeam):
		return nil, fmt.Errorf("create team %s: %w", spec.ID, err) // held by another daemon, damaged
	}
	for _, d := range []string{dir, filepath.Join(dir, "inbox"), filepath.Join(dir, "members")} {
		if err := mkdirSynced(d); err != nil {
			return nil, fmt.Errorf("create team %s: %w", spec.ID, err)
		}
	}
	t, err := s.open(spec.ID)
	if err != nil {
		return nil, fmt.Errorf("create team %s: %w", spec.ID, err)
	}
	lead := spec.Lead
	lead.PlanMode = false
	if err := t.openMember(lead.Name); err != nil {
		t.close()
		return nil, fmt.Errorf("create team %s: %w", spec.ID, err)
	}
	if err := t.append(created{ID: spec.ID, Lead: lead, Budget: spec.Budget, Grace: spec.Grace}); err != nil {
		t.close()
		return nil, fmt.Errorf("create team %s: %w", spec.ID, err)
	}
	s.teams[spec.ID] = t
	return t, nil
}

// Team returns the team with this id, loading it (and every member's
// inbox and log) the first time. The error wraps ErrUnknownTeam when there
// is no such team.
func (s *Store) Team(id string) (*Team, error) {
	if !validName(id) {
		return nil, fmt.Errorf("team %q: %w", id, ErrUnknownTeam)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("team %s: store %w", id, ErrClosed)
	}
	if t, ok := s.teams[id]; ok {
		return t, nil
	}
	t, err := s.load(id)
	if err != nil {
		return nil, err
	}
	s.teams[id] = t
	return t, nil
}

// IDs lists the teams on disk, sorted.
func (s *Store) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && validName(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Close closes every loaded team's files; later calls fail with
// ErrClosed and waiters wake. Safe to call twice.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, t := range s.teams {
		errs = append(errs, t.close())
	}
	return errors.Join(errs...)
}

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
	appendMu sync.Mutex // serializes check, append and fold on the team log
	mu       sync.Mutex // guards the fields below (st is written under appendMu too)
	st       state
	members  map[string]*member
	ready    []string      // members with unconsumed messages, not running, in the order they got work
	signal   chan struct{} // capacity 1: a member became ready (bursts merge)
	changed  chan struct{} // closed and replaced on every change: what waiters select on
	closed   bool
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
}

func checkMemberName(name string) error {
	if name == Human || name == System {
		return fmt.Errorf("%w member name %q: reserved", ErrInvalid, name)
	}
	return checkName("member name", name)
}

// open opens (creating) the team log of team id, empty state. s.mu held.
func (s *Store) open(id string) (*Team, error) {
	t := &Team{id: id, dir: filepath.Join(s.dir, id), now: s.now, logger: s.logger,
		st: newState(), members: map[string]*member{},
		signal: make(chan struct{}, 1), changed: make(chan struct{})}
	l, err := runs.OpenLog(filepath.Join(t.dir, "team.jsonl"), runs.LogOptions{Now: s.now, Replay: t.st.replay})
	if err != nil {
		return nil, err
	}
	t.log = l
	t.repaired(l)
	return t, nil
}

// load opens an existing team and every member's files. s.mu held.
func (s *Store) load(id string) (*Team, error) {
	path := filepath.Join(s.dir, id, "team.jsonl")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("team %s: %w", id, ErrUnknownTeam)
	}
	t, err := s.open(id)
	if err != nil {
		return nil, fmt.Errorf("load team %s: %w", id, err)
	}
	if t.st.id == "" {
		// A Create cut short before its first record was durable.
		t.close()
		return nil, fmt.Errorf("team %s: %w (%s holds no record)", id, ErrUnknownTeam, path)
	}
	var errs []error
	for _, name := range t.st.order {
		errs = append(errs, t.openMember(name))
	}
	if err := errors.Join(errs...); err != nil {
		t.close()
		return nil, fmt.Errorf("load team %s: %w", id, err)
	}
	t.mu.Lock()
	for _, name := range t.st.order {
		mb := t.members[name]
		if t.depthLocked(mb) > 0 && t.st.members[name].status != StatusStopped {
			t.queueLocked(mb)
		}
	}
	t.mu.Unlock()
	// A member stopped with mail it never read (the daemon died between
	// the stop and the bounces): send it back now.
	// The team is usable if this fails; the next load tries again.
	for _, name := range t.st.order {
		if t.st.members[name].status == StatusStopped {
			if err := t.bounceUnread(name); err != nil {
				t.logger.Warn("send a stopped member's unread mail back", "team", id, "member", name, "err", err)
			}
		}
	}
	return t, nil
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

// mkdirSynced creates dir if it is missing and fsyncs its parent, so the
// new name survives a crash.
func mkdirSynced(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	d, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", filepath.Dir(dir), err)
	}
	return nil
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
