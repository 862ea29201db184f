package proc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// ErrIncomplete marks a copy abandoned because the entrypoint no longer
// matches its manifest's sha256: usually a copy in progress, retried when
// the files change rather than marked failed.
var ErrIncomplete = errors.New("sha256 mismatch: the entrypoint does not match its manifest (copy in progress?)")

// BinCache holds the verified private copies that skill processes run,
// one per entrypoint content (sha256). Instances of the same content (a
// restart after a crash, one binary serving several skills) share a copy,
// so it is read, hashed and written once, and its pages are shared in
// memory. A copy is removed when its last instance stops.
type BinCache struct {
	dir    string
	gid    int                 // the skill user's group, or -1
	hashes *manifest.HashCache // told the digest of each source copied unchanged

	mu      sync.Mutex // guards entries
	entries map[string]*binEntry
}

type binEntry struct {
	path  string
	refs  int
	ready chan struct{} // closed once the copy is verified (or failed)
	err   error
}

// NewBinCache keeps copies under dir. With gid >= 0 (skills run as another
// user) each copy and its folder belong to that group, readable and
// executable by it alone. hashes, which may be nil, learns the digest of
// every source that matched and did not change while it was copied, so the
// scan after a start that deferred its hashing (manifest.Options.DeferHash)
// does not read it again.
func NewBinCache(dir string, gid int, hashes *manifest.HashCache) *BinCache {
	return &BinCache{dir: dir, gid: gid, hashes: hashes, entries: map[string]*binEntry{}}
}

// Acquire returns the path of a verified copy of src, whose sha256 must be
// want, and a release func. The first caller for a content copies; callers
// that arrive meanwhile wait for it.
func (c *BinCache) Acquire(src, want string) (string, func(), error) {
	c.mu.Lock()
	e, ok := c.entries[want]
	if !ok {
		e = &binEntry{ready: make(chan struct{})}
		c.entries[want] = e
	}
	e.refs++
	c.mu.Unlock()
	if !ok {
		e.path, e.err = c.copy(src, want)
		close(e.ready)
	}
	<-e.ready
	var once sync.Once
	release := func() { once.Do(func() { c.release(want, e) }) }
	if e.err != nil {
		release()
		return "", nil, e.err
	}
	return e.path, release, nil
}

// release drops one reference to e; the last one removes the copy.
func (c *BinCache) release(want string, e *binEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(c.entries, want)
		if e.path != "" {
			os.RemoveAll(filepath.Dir(e.path))
		}
	}
}

func (c *BinCache) copy(src, want string) (string, error) {
	mode := os.FileMode(0o700)
	if c.gid >= 0 {
		mode = 0o711
	}
	if err := os.MkdirAll(c.dir, mode); err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	dir, err := os.MkdirTemp(c.dir, want[:min(16, len(want))]+".")
	if err != nil {
		return "", fmt.Errorf("create run folder: %w", err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := copyVerified(src, dst, want, c.hashes); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if c.gid >= 0 {
		if err := shareWithGroup(dir, dst, c.gid); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("open the copy to the skill user's group: %w", err)
		}
	}
	return dst, nil
}

// copyBufferSize is copyVerified's buffer: 64 KiB, not io.Copy's 32 KiB
// nor anything larger. A 20 MB copy takes 19.4 ms at 32 KiB, 17.6 ms at
// 64 KiB and 16.3 ms at 256 KiB (BenchmarkCopyVerified, medians of 5), but
// from 128 KiB on, every skill process started from the copy had about
// 1 MiB more resident (16.8 against 15.7 MiB per skill at 256 KiB, with
// PSS unchanged for a shared copy and 1.2 MiB more per skill for distinct
// binaries): the copy's page cache is apparently built of larger folios
// from larger writes, and a fault maps a whole folio in. 64 KiB keeps most
// of the speed and none of the memory.
const copyBufferSize = 64 << 10

// copyVerified copies src to dst while hashing it and fails with
// ErrIncomplete unless the copy's sha256 equals want. What runs is the copy,
// so what was verified is what runs. A match is recorded in hashes for src
// as it was while it was read.
func copyVerified(src, dst, want string, hashes *manifest.HashCache) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open entrypoint: %w", err)
	}
	defer in.Close()
	before, err := in.Stat()
	if err != nil {
		return fmt.Errorf("open entrypoint: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o500)
	if err != nil {
		return fmt.Errorf("copy entrypoint: %w", err)
	}
	h := sha256.New()
	// The struct hides in's WriteTo, which would bring back io.Copy's
	// 32 KiB buffer.
	_, err = io.CopyBuffer(io.MultiWriter(out, h), struct{ io.Reader }{in}, make([]byte, copyBufferSize))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("copy entrypoint: %w", err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != want {
		return fmt.Errorf("%w: manifest %s…, file %s…", ErrIncomplete, want[:min(12, len(want))], got[:12])
	}
	if after, err := in.Stat(); err == nil {
		hashes.Record(src, before, after, got)
	}
	return nil
}

// shareWithGroup gives the copy and its folder to group gid: the folder
// searchable (0750) and the binary executable (0550) by that group, and
// nothing for anyone else.
func shareWithGroup(dir, bin string, gid int) error {
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o750}, {bin, 0o550}} {
		if err := os.Chown(p.path, -1, gid); err != nil {
			return err
		}
		if err := os.Chmod(p.path, p.mode); err != nil {
			return err
		}
	}
	return nil
}
