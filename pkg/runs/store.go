package runs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Config says where a Store keeps its runs. Only Dir is required.
type Config struct {
	// Dir is the daemon's state folder; runs live in Dir/runs/<id>/log.jsonl.
	Dir string
	// Logger reports repairs (a torn tail cut on open). Discarded when nil.
	Logger *slog.Logger
	// Now is the clock for run ids and event times; time.Now when nil.
	Now func() time.Time
	// KeepFinished is how many finished runs the store keeps folded in
	// memory (transcripts and all), the most recently finished or loaded;
	// the others are read again from their files when asked for (about
	// 0.7 ms per 100 events). Their summaries stay, so List reads no file
	// twice. 0 means 256; a negative value keeps none.
	KeepFinished int
}

// Store is the set of runs under a state folder. It loads a run's log the
// first time the run is asked for and keeps its folded State: every
// unfinished run's, and the most recent finished ones' (KeepFinished). A
// finished run's file is closed once loaded; its events stay readable.
// The store runs no goroutine: a run that waits is only its log.
type Store struct {
	dir    string // Dir/runs
	logger *slog.Logger
	now    func() time.Time

	keep int // Config.KeepFinished, defaulted

	mu       sync.Mutex         // guards the fields below
	runs     map[string]*Run    // loaded runs: every unfinished one asked for, and the kept finished ones
	kept     []string           // the finished runs in runs, oldest first
	finished map[string]Summary // every finished run seen, without its transcript
	lastID   time.Time          // time part of the last id made, so ids only grow
	closed   bool
}

// Open returns the store for cfg.Dir, creating Dir/runs if needed. It
// reads no log yet: List, Unfinished and Run load runs on demand.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("runs: no state folder (Config.Dir)")
	}
	dir := filepath.Join(cfg.Dir, "runs")
	if err := MkdirSynced(dir); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	s := &Store{dir: dir, logger: cfg.Logger, now: cfg.Now, keep: cfg.KeepFinished,
		runs: map[string]*Run{}, finished: map[string]Summary{}}
	switch {
	case s.keep == 0:
		s.keep = 256
	case s.keep < 0:
		s.keep = 0
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Run is one run: its log and the state folded from it. Its methods are
// safe for concurrent use. Appends are serialized: the engine driving the
// run is its one writer in practice, and a stop or a human's answer posted
// through the API queue behind the engine's append rather than interleave.
type Run struct {
	id  string
	log *Log

	appendMu sync.Mutex // serializes Append: check, write, fold
	stateMu  sync.RWMutex
	state    State         // guarded by stateMu; written only under appendMu too
	done     chan struct{} // closed when the stop event is durable
	onStop   func(*Run)    // tells the store, once the stop is durable
}

const idLayout = "20060102T150405.000Z"

// newID returns a run id: the UTC creation time to the millisecond and six
// random hex digits, "20261205T234618.123Z-3f9a1c". Ids sort by creation
// (the store never hands out a time part twice or backwards) and read as
// dates in `ls`.
func (s *Store) newID() string {
	t := s.now().UTC().Truncate(time.Millisecond)
	if !t.After(s.lastID) {
		t = s.lastID.Add(time.Millisecond)
	}
	s.lastID = t
	var r [3]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	return t.Format(idLayout) + "-" + hex.EncodeToString(r[:])
}

// ValidID reports whether id has the form of a run id. Ids name folders,
// so anything else (a "../x" from a URL) is refused before it reaches the
// file system.
func ValidID(id string) bool {
	const n = len(idLayout)
	if len(id) != n+7 || id[n] != '-' {
		return false
	}
	if _, err := time.Parse(idLayout, id[:n]); err != nil {
		return false
	}
	for _, c := range id[n+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Create starts a new run: a folder, a log, and its started event, all on
// disk before Create returns.
func (s *Store) Create(st Started) (*Run, error) {
	if err := checkNext(st, "", 0, nil); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("create run: store %w", ErrClosed)
	}
	id := s.newID()
	dir := filepath.Join(s.dir, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	r, err := s.start(id, dir, st)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("create run %s: %w", id, err)
	}
	s.runs[id] = r
	return r, nil
}

func (s *Store) start(id, dir string, st Started) (*Run, error) {
	if err := syncDir(s.dir); err != nil {
		return nil, err
	}
	l, err := OpenLog(filepath.Join(dir, "log.jsonl"), LogOptions{Now: s.now})
	if err != nil {
		return nil, err
	}
	r := &Run{id: id, log: l, done: make(chan struct{}), onStop: s.stopped}
	if _, err := r.Append(st); err != nil {
		l.Close()
		return nil, err
	}
	return r, nil
}

// Run returns the run with this id, loading (and repairing) its log the
// first time. The error wraps ErrUnknownRun when there is no such run.
func (s *Store) Run(id string) (*Run, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("run %q: %w", id, ErrUnknownRun)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("run %s: store %w", id, ErrClosed)
	}
	if r, ok := s.runs[id]; ok {
		return r, nil
	}
	r, err := s.load(id)
	if err != nil {
		return nil, err
	}
	s.runs[id] = r
	if r.Stopped() {
		s.keepFinished(r)
	}
	return r, nil
}

// stopped is called by a run of this store once its stop is durable.
func (s *Store) stopped(r *Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[r.id] == r {
		s.keepFinished(r)
	}
}

// keepFinished records a finished run's summary and lets go of the oldest
// finished runs beyond the ones to keep. s.mu must be held.
func (s *Store) keepFinished(r *Run) {
	s.finished[r.id] = r.summary(false)
	s.kept = append(s.kept, r.id)
	for len(s.kept) > s.keep {
		delete(s.runs, s.kept[0])
		s.kept = slices.Delete(s.kept, 0, 1)
	}
}

// load opens a run's log and folds it. A finished run's file is closed at
// once: it takes no descriptor and no lock while the store holds it.
func (s *Store) load(id string) (*Run, error) {
	r := &Run{id: id, done: make(chan struct{}), onStop: s.stopped}
	path := filepath.Join(s.dir, id, "log.jsonl")
	l, err := OpenLog(path, LogOptions{Now: s.now, MustExist: true, Replay: r.state.Apply})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %w", id, ErrUnknownRun)
	}
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	if rep := l.Repaired(); rep != nil {
		s.logger.Warn("cut a torn tail from a run log", "run", id, "file", path,
			"offset", rep.Offset, "bytes", rep.Cut, "reason", rep.Reason)
	}
	if r.state.LastSeq == 0 {
		// A Create cut short by a crash, before its started event was
		// durable: the run never existed for anyone.
		l.Close()
		return nil, fmt.Errorf("run %s: %w (%s holds no event)", id, ErrUnknownRun, path)
	}
	r.log = l
	if r.state.Status == StatusStopped {
		close(r.done)
		if err := l.Close(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// ids lists the run folders, oldest first.
func (s *Store) ids() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// List returns every run's summary without its transcript, oldest first.
// A run whose log cannot be loaded is left out and reported in the error,
// all such runs at once; the others are still returned.
func (s *Store) List() ([]Summary, error) {
	var out []Summary
	err := s.each(func(sum Summary, _ *Run) { out = append(out, sum) })
	return out, err
}

// Unfinished returns the runs that have no stop event, oldest first: after
// a restart, the runs to resume. Errors are reported as List does.
func (s *Store) Unfinished() ([]*Run, error) {
	var out []*Run
	err := s.each(func(_ Summary, r *Run) {
		if r != nil && !r.Stopped() {
			out = append(out, r)
		}
	})
	return out, err
}

// each calls fn for every run, oldest first, with its summary and, unless
// it is a finished run the store knows the summary of, the loaded run.
// Runs that fail to load are reported together in the error.
func (s *Store) each(fn func(Summary, *Run)) error {
	ids, err := s.ids()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		s.mu.Lock()
		sum, done := s.finished[id]
		s.mu.Unlock()
		if done {
			fn(sum, nil)
			continue
		}
		r, err := s.Run(id)
		switch {
		case errors.Is(err, ErrUnknownRun):
			// removed meanwhile, or a create cut short
		case err != nil:
			errs = append(errs, err)
		default:
			fn(r.summary(false), r)
		}
	}
	return errors.Join(errs...)
}

// Close closes every open log; later calls fail with ErrClosed. Followers
// blocked in Subscription.Next wake with ErrClosed. Safe to call twice.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, r := range s.runs {
		errs = append(errs, r.log.Close())
	}
	return errors.Join(errs...)
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Path is the run's log file.
func (r *Run) Path() string { return r.log.Path() }

// Append checks the payloads against the run (nothing after a stop, a
// result only for a logged call and only once, human input only while
// waiting, ...) and appends them as one batch, durable when Append
// returns. A refused batch writes nothing. Appending a Stop closes the
// log's file and Done.
func (r *Run) Append(ps ...Payload) ([]Event, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	vs := make([]Payload, len(ps))
	for i, p := range ps {
		v, err := payloadValue(p)
		if err != nil {
			return nil, fmt.Errorf("run %s: payload %d: %w", r.id, i+1, err)
		}
		vs[i] = v
	}
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	// Only appends write the state, and they hold appendMu: reading it
	// here needs no stateMu.
	if err := r.state.checkBatch(vs); err != nil {
		return nil, fmt.Errorf("run %s: %w", r.id, err)
	}
	evs, err := r.log.Append(vs...)
	if err != nil {
		return nil, err
	}
	r.stateMu.Lock()
	for i, ev := range evs {
		if err := r.state.apply(ev, vs[i]); err != nil {
			r.stateMu.Unlock()
			// checkBatch passed, so this is a bug, not a bad request.
			return evs, fmt.Errorf("run %s: fold appended event: %w", r.id, err)
		}
	}
	stopped := r.state.Status == StatusStopped
	r.stateMu.Unlock()
	if stopped {
		close(r.done)
		r.onStop(r)
		if err := r.log.Close(); err != nil {
			return evs, err
		}
	}
	return evs, nil
}

// Stop appends a stop event with this reason. Stopping a stopped run is
// an error wrapping ErrStopped, so a caller can tell "stopped now" from
// "had already ended"; the summary says how it ended.
func (r *Run) Stop(reason, detail string) error {
	_, err := r.Append(Stop{Reason: reason, Detail: detail})
	return err
}

// Done is closed once the run's stop event is durable: an engine selects
// on it to cancel in-flight model and tool calls when the run is stopped
// from outside.
func (r *Run) Done() <-chan struct{} { return r.done }

// Stopped reports whether the run has its stop event.
func (r *Run) Stopped() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Summary returns the run's summary with its transcript.
func (r *Run) Summary() Summary { return r.summary(true) }

func (r *Run) summary(transcript bool) Summary {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	return r.state.summary(r.id, transcript)
}

// Status is the run's status.
func (r *Run) Status() Status {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	return r.state.Status
}

// Result returns the logged result of tool call callID, if there is one.
// A resumed engine asks before each call and never repeats one that has.
func (r *Run) Result(callID string) (ToolResult, bool) {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	return r.state.Result(callID)
}

// Pending lists logged tool calls without a result (see State.Pending).
func (r *Run) Pending() []ToolCall {
	r.stateMu.RLock()
	defer r.stateMu.RUnlock()
	return r.state.Pending()
}

// Events returns every durable event after seq after, oldest first: what
// an engine replays to rebuild its participants' contexts on resume.
func (r *Run) Events(after uint64) ([]Event, error) {
	var out []Event
	for {
		evs, _, err := r.log.Read(after, 0)
		if err != nil && !errors.Is(err, ErrClosed) {
			return out, err
		}
		if len(evs) == 0 {
			return out, nil
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].Seq
	}
}
