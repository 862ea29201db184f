package mcprt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// Copies keeps verified copies of version folders for reuse, so that a
// restart after a crash, or a second instance of the same version, does not
// copy a node_modules again (2–4 s for server-everything's 3,900 files on a
// loaded machine; hashing the copy again takes a tenth of that). Before each
// reuse the copy is hashed again (read, not written): one that changed since
// it was made is never run, but discarded and made afresh. A copy in use is
// kept; an idle one is kept until Prune or Close, so the loader, which
// prunes after each reconcile, leaves a crashed version's copy for its
// restart. Its methods are safe for concurrent use.
type Copies struct {
	dir string

	mu     sync.Mutex // guards copies and closed
	copies map[string]*sharedCopy
	closed bool
}

type sharedCopy struct {
	root  string // its own folder in Copies.dir, removed with it
	path  string // root/app, the copy
	refs  int
	ready chan struct{} // closed once made (or failed: err)
	err   error
	stale bool // failed its check: removed at its last release
}

// NewCopies keeps copies in a new folder inside dir (os.TempDir() if empty).
func NewCopies(dir string) (*Copies, error) {
	d, err := os.MkdirTemp(dir, "skillhost-mcp-copies-")
	if err != nil {
		return nil, fmt.Errorf("copies: %w", err)
	}
	// A skill user must reach its copy; it cannot list the folder.
	if err := os.Chmod(d, 0o711); err != nil {
		return nil, fmt.Errorf("copies: %w", err)
	}
	return &Copies{dir: d, copies: map[string]*sharedCopy{}}, nil
}

// acquire returns a verified copy of src that hashes to digest, opened to
// user when not nil, and the function that gives it back.
func (c *Copies) acquire(ctx context.Context, src, digest string, user *User) (string, func(), error) {
	key := digest
	if user != nil {
		key = fmt.Sprintf("%s-%d", digest, user.GID) // a copy belongs to its account's group
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return "", nil, errors.New("copies: closed")
		}
		e, ok := c.copies[key]
		if !ok {
			// A folder of its own: a stale copy of the same key may still
			// be in use while this one is made.
			root, err := os.MkdirTemp(c.dir, key+"-")
			if err != nil {
				c.mu.Unlock()
				return "", nil, fmt.Errorf("copies: %w", err)
			}
			e = &sharedCopy{root: root, path: filepath.Join(root, "app"), ready: make(chan struct{})}
			c.copies[key] = e
			e.refs++
			c.mu.Unlock()
			e.err = c.make(ctx, e, src, digest, user)
			close(e.ready)
			if e.err != nil {
				c.release(key, e)
				return "", nil, e.err
			}
			return e.path, func() { c.release(key, e) }, nil
		}
		e.refs++
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			c.release(key, e)
			return "", nil, ctx.Err()
		}
		if e.err == nil {
			got, err := manifest.HashFolder(ctx, e.path, nil)
			if err == nil && got == digest {
				return e.path, func() { c.release(key, e) }, nil
			}
		}
		// Failed to be made, or changed since: drop it and make a new one.
		c.mu.Lock()
		e.stale = true
		if c.copies[key] == e {
			delete(c.copies, key)
		}
		c.mu.Unlock()
		c.release(key, e)
	}
}

func (c *Copies) make(ctx context.Context, e *sharedCopy, src, digest string, user *User) error {
	if user != nil {
		if err := os.Chmod(e.root, 0o711); err != nil {
			return err
		}
	}
	got, err := copyFolder(ctx, src, e.path)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if got != digest {
		return mismatch(src, got, digest)
	}
	if user != nil {
		if err := openApp(user, e.path); err != nil {
			return fmt.Errorf("open the copy to gid %d: %w", user.GID, err)
		}
	}
	return nil
}

// release gives a copy back; a stale one, or any once closed, goes with
// its last user.
func (c *Copies) release(key string, e *sharedCopy) {
	c.mu.Lock()
	e.refs--
	remove := e.refs == 0 && (e.stale || c.closed || e.err != nil)
	if remove && c.copies[key] == e {
		delete(c.copies, key)
	}
	c.mu.Unlock()
	if remove {
		_ = os.RemoveAll(e.root)
		if c.closed {
			_ = os.Remove(c.dir) // the last copy out after Close
		}
	}
}

// Prune removes the copies no instance uses.
func (c *Copies) Prune() {
	c.mu.Lock()
	var idle []string
	for key, e := range c.copies {
		if e.refs == 0 {
			idle = append(idle, e.root)
			delete(c.copies, key)
		}
	}
	c.mu.Unlock()
	for _, p := range idle {
		_ = os.RemoveAll(p)
	}
}

// Close removes the idle copies and the folder; copies in use go with
// their last instance. Safe to call more than once.
func (c *Copies) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.Prune()
	_ = os.Remove(c.dir) // fails while a copy is in use; that copy's release empties it
}
