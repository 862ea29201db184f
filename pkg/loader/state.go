package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillhost/skillhost/internal/fileio"
)

// StateStore keeps the operator's decisions per skill (disabled, pinned
// version), which must outlive a host restart. The loader reads them at
// every scan and changes them on Disable, Enable, Pin and Unpin. The
// default is LocalStateStore (a file in the state folder, or memory); a
// fleet of hosts would share one store instead. Methods are called
// concurrently.
type StateStore interface {
	// Get returns skill's decisions; none is false and "".
	Get(skill string) (disabled bool, pin string)
	// Update changes skill's decisions with fn, atomically with respect
	// to other Updates, and has them persisted when it returns nil. When
	// it returns an error nothing changed, and the error says why.
	Update(skill string, fn func(*Decision)) error
}

// Decision is what an operator decided about one skill. The zero value is
// no decision.
type Decision struct {
	Disabled bool   `json:"disabled,omitempty"`
	Pin      string `json:"pin,omitempty"`
}

// LocalStateStore is the StateStore of one host: in memory, and, when it
// has a folder, in a file there. The file is written atomically: temp file,
// fsync, rename, fsync of the folder, so a crash leaves either the old
// decisions or the new ones.
type LocalStateStore struct {
	path string // empty: in memory only

	mu     sync.Mutex // guards skills and serializes writes
	skills map[string]Decision
}

var _ StateStore = (*LocalStateStore)(nil)

type stateFile struct {
	Version int                 `json:"version"`
	Skills  map[string]Decision `json:"skills"`
	Updated time.Time           `json:"updated"`
}

// StateFileName is the file in the state folder.
const StateFileName = "state.json"

// DigestCacheFileName is where host serve keeps Config.DigestCache, beside
// StateFileName in the state folder.
const DigestCacheFileName = "digests.json"

// NewStateStore returns an empty, in-memory store.
func NewStateStore() *LocalStateStore { return &LocalStateStore{skills: map[string]Decision{}} }

// OpenStateStore loads the decisions in dir/state.json. A missing file
// means no decisions. A corrupt or unreadable file is moved aside
// (state.json.corrupt-… or .unreadable-…, never deleted) and the store starts empty; warning then says what
// happened, for the log. Only a folder that cannot be created is an error.
func OpenStateStore(dir string) (s *LocalStateStore, warning string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("state folder: %w", err)
	}
	s = &LocalStateStore{path: filepath.Join(dir, StateFileName), skills: map[string]Decision{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, "", nil
	}
	// A file that cannot be read or parsed is kept aside, never overwritten:
	// the next decision would otherwise replace it and lose what it held.
	keepAside := func(what string, err error) (*LocalStateStore, string, error) {
		aside := fmt.Sprintf("%s.%s-%s", s.path, what, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if rerr := os.Rename(s.path, aside); rerr != nil {
			return s, fmt.Sprintf("state file %s is %s (%v) and could not be moved aside (%v); starting with no operator decisions", s.path, what, err, rerr), nil
		}
		return s, fmt.Sprintf("state file %s is %s (%v); kept it as %s and started with no operator decisions", s.path, what, err, aside), nil
	}
	if err != nil {
		return keepAside("unreadable", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
		if err == nil {
			err = fmt.Errorf("unknown version %d", f.Version)
		}
		return keepAside("corrupt", err)
	}
	for k, v := range f.Skills {
		s.skills[k] = v
	}
	return s, "", nil
}

// Get returns a skill's decisions.
func (s *LocalStateStore) Get(skill string) (disabled bool, pin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.skills[skill]
	return st.Disabled, st.Pin
}

// Update changes one skill's decisions and persists them. If the write
// fails nothing changes, in memory or on disk, and the error says why.
func (s *LocalStateStore) Update(skill string, fn func(*Decision)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.skills[skill]
	fn(&st)
	next := make(map[string]Decision, len(s.skills)+1)
	for k, v := range s.skills {
		next[k] = v
	}
	if st == (Decision{}) {
		delete(next, skill)
	} else {
		next[skill] = st
	}
	if s.path != "" {
		if err := writeState(s.path, next); err != nil {
			return fmt.Errorf("cannot persist the decision, so nothing changed: %w", err)
		}
	}
	s.skills = next
	return nil
}

// Path is the state file, or "" for an in-memory store.
func (s *LocalStateStore) Path() string { return s.path }

func writeState(path string, skills map[string]Decision) error {
	b, err := json.MarshalIndent(stateFile{Version: 1, Skills: skills, Updated: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(path, append(b, '\n'), 0o600)
}
