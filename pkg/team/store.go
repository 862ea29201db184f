package team

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

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

	signal chan struct{} // capacity 1: a member of some loaded team became ready

	mu     sync.Mutex // guards the fields below
	teams  map[string]*Team
	next   int // where Take starts its round over the teams
	closed bool
}

// Open returns the store for cfg.Dir, creating Dir/teams if needed.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("team: no state folder (Config.Dir)")
	}
	dir := filepath.Join(cfg.Dir, "teams")
	if err := runs.MkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("team: %w", err)
	}
	s := &Store{dir: dir, now: cfg.Now, logger: cfg.Logger, teams: map[string]*Team{}, signal: make(chan struct{}, 1)}
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
		if err := runs.MkdirSynced(d); err != nil {
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

// Ready is signalled (capacity 1, bursts merge) when a member of any
// loaded team gets work: a driver that serves every team from one worker
// pool waits on it and calls Take until it reports nothing.
func (s *Store) Ready() <-chan struct{} { return s.signal }

// Take is Team.Take over every loaded team, taking the teams in turn so
// that one busy team does not starve the others.
func (s *Store) Take() (t *Team, member string, ok bool) {
	s.mu.Lock()
	teams := make([]*Team, 0, len(s.teams))
	for _, id := range slices.Sorted(maps.Keys(s.teams)) {
		teams = append(teams, s.teams[id])
	}
	start := s.next
	s.next++
	s.mu.Unlock()
	for i := range teams {
		t := teams[(start+i)%len(teams)]
		if name, ok := t.Take(); ok {
			return t, name, true
		}
	}
	return nil, "", false
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

// open opens (creating) the team log of team id, empty state. s.mu held.
func (s *Store) open(id string) (*Team, error) {
	t := &Team{id: id, dir: filepath.Join(s.dir, id), now: s.now, logger: s.logger,
		st: newState(), members: map[string]*member{},
		signal: make(chan struct{}, 1), storeSignal: s.signal, changed: make(chan struct{})}
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
