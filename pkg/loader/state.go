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

// StateStore holds operator decisions per skill (disabled, pinned version)
// and, when it has a folder, persists them so they survive host restarts.
// The file is written atomically: temp file, fsync, rename, fsync of the
// folder, so a crash leaves either the old decisions or the new ones.
type StateStore struct {
	path string // empty: in memory only

	mu     sync.Mutex // guards skills and serializes writes
	skills map[string]skillState
}

type skillState struct {
	Disabled bool   `json:"disabled,omitempty"`
	Pin      string `json:"pin,omitempty"`
}

type stateFile struct {
	Version int                   `json:"version"`
	Skills  map[string]skillState `json:"skills"`
	Updated time.Time             `json:"updated"`
}

// StateFileName is the file in the state folder.
const StateFileName = "state.json"

// DigestCacheFileName is where host serve keeps Config.DigestCache, beside
// StateFileName in the state folder.
const DigestCacheFileName = "digests.json"

// NewStateStore returns an empty, in-memory store.
func NewStateStore() *StateStore { return &StateStore{skills: map[string]skillState{}} }

// OpenStateStore loads the decisions in dir/state.json. A missing file
// means no decisions. A corrupt or unreadable file is moved aside
// (state.json.corrupt-… or .unreadable-…, never deleted) and the store starts empty; warning then says what
// happened, for the log. Only a folder that cannot be created is an error.
func OpenStateStore(dir string) (s *StateStore, warning string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("state folder: %w", err)
	}
	s = &StateStore{path: filepath.Join(dir, StateFileName), skills: map[string]skillState{}}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, "", nil
	}
	// A file that cannot be read or parsed is kept aside, never overwritten:
	// the next decision would otherwise replace it and lose what it held.
	keepAside := func(what string, err error) (*StateStore, string, error) {
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
func (s *StateStore) Get(skill string) (disabled bool, pin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.skills[skill]
	return st.Disabled, st.Pin
}

// update changes one skill's decisions and persists them. If the write
// fails nothing changes, in memory or on disk, and the error says why.
func (s *StateStore) update(skill string, fn func(*skillState)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.skills[skill]
	fn(&st)
	next := make(map[string]skillState, len(s.skills)+1)
	for k, v := range s.skills {
		next[k] = v
	}
	if st == (skillState{}) {
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
func (s *StateStore) Path() string { return s.path }

func writeState(path string, skills map[string]skillState) error {
	b, err := json.MarshalIndent(stateFile{Version: 1, Skills: skills, Updated: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(path, append(b, '\n'), 0o600)
}
