package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/skillhost/skillhost/internal/fileio"
)

// maxCachedHashes bounds the cache. Entries for files that went away are never looked up
// again; rather than track them, the cache starts over when it grows past any plausible tree.
const maxCachedHashes = 1 << 17 // an MCP server's node_modules is thousands of files

// errChangedWhileHashing means the file was modified between the start and the end of hashing:
// a write in progress, so the digest means nothing yet.
var errChangedWhileHashing = errors.New("file changed while it was being hashed")

// HashCache remembers entrypoint digests so a rescan, which the watcher triggers on every
// change anywhere in the tree, only re-reads binaries that changed. The key is (path, size,
// mtime, device, inode, and on Linux ctime): a replaced or rewritten file misses the cache.
// The zero value is not usable; use NewHashCache. Safe for concurrent use.
//
// A cache can also be saved to a file and opened from it (OpenHashCache, Save), so a host
// that restarts over an unchanged tree does not read every binary again before it can start
// them. What a cached digest decides is only the scan's verdict (valid or incomplete) and the
// version's fingerprint: the loader hashes the private copy it runs in every case, so a wrong
// entry, whatever its cause, can make a launch fail as incomplete but never run a binary that
// does not match its manifest.
type HashCache struct {
	mu      sync.Mutex // guards entries, epoch and dirty
	entries map[hashKey]hashEntry
	// epoch counts Saves; an entry used since the last Save has used == epoch, and only those
	// are saved, so the file holds what the last scan looked at and nothing that went away.
	// It starts at 1, so used == 0 means never used: an entry opened from the file (a digest
	// whose file may have changed since) counts only once a lookup has marked it.
	epoch uint64
	dirty bool // an entry was added, or one from the file went unused, since the last Save
	reads atomic.Int64
}

type hashKey struct {
	path     string
	size     int64
	mtimeNS  int64
	dev, ino uint64
	ctimeNS  int64
}

type hashEntry struct {
	sum  string
	used uint64 // the epoch of its last use
}

// Reads counts the files hashFile read through this cache (hits do not count): what a scan
// cost in reading binaries, for tests and for anyone measuring a start.
func (c *HashCache) Reads() int64 { return c.reads.Load() }

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache {
	return &HashCache{entries: make(map[hashKey]hashEntry), epoch: 1}
}

// hashRecord is one entry as saved.
type hashRecord struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	CtimeNS int64  `json:"ctime_ns"`
	SHA256  string `json:"sha256"`
}

type hashFile struct {
	Version int          `json:"version"`
	Entries []hashRecord `json:"entries"`
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// OpenHashCache returns a cache holding the digests saved in file by Save. A missing file
// gives an empty cache. A file that cannot be read or parsed also gives an empty cache, with
// a warning that says why: it is a cache, so losing it costs one re-read of every binary and
// nothing else; the next Save replaces it.
func OpenHashCache(file string) (c *HashCache, warning string) {
	c = NewHashCache()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return c, ""
	}
	if err != nil {
		return c, fmt.Sprintf("digest cache %s cannot be read (%v); every entrypoint is hashed again", file, err)
	}
	var hf hashFile
	if err := json.Unmarshal(b, &hf); err != nil || hf.Version != 1 {
		if err == nil {
			err = fmt.Errorf("version %d, want 1", hf.Version)
		}
		return c, fmt.Sprintf("digest cache %s is unusable (%v); every entrypoint is hashed again", file, err)
	}
	for _, r := range hf.Entries {
		if r.Path == "" || !hexSHA256.MatchString(r.SHA256) || !persistable(r.Dev, r.Ino, r.CtimeNS) {
			continue
		}
		k := hashKey{path: r.Path, size: r.Size, mtimeNS: r.MtimeNS, dev: r.Dev, ino: r.Ino, ctimeNS: r.CtimeNS}
		c.entries[k] = hashEntry{sum: r.SHA256}
	}
	c.dirty = len(c.entries) != len(hf.Entries)
	return c, ""
}

// persistable says whether a key identifies a file well enough to trust across a restart:
// only where the platform gives an inode and a ctime, which no user can set, so a file
// rewritten with its size and mtime restored still misses.
func persistable(dev, ino uint64, ctimeNS int64) bool { return ino != 0 && ctimeNS != 0 }

// Save writes the entries used since the previous Save (by a full scan: every entrypoint
// of the tree) to file, replacing it by rename, and does nothing when they are what the file
// already holds. There is no fsync: a file lost or torn by a crash is only a cold cache.
func (c *HashCache) Save(file string) error {
	c.mu.Lock()
	var hf hashFile
	hf.Version = 1
	dirty := c.dirty
	for k, e := range c.entries {
		if e.used != c.epoch {
			delete(c.entries, k) // its file changed or went away: the key will not come back
			dirty = true
			continue
		}
		if persistable(k.dev, k.ino, k.ctimeNS) {
			hf.Entries = append(hf.Entries, hashRecord{Path: k.path, Size: k.size, MtimeNS: k.mtimeNS,
				Dev: k.dev, Ino: k.ino, CtimeNS: k.ctimeNS, SHA256: e.sum})
		}
	}
	c.epoch++
	c.dirty = false
	c.mu.Unlock()
	if !dirty {
		return nil
	}
	b, err := json.Marshal(hf)
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(file, b, 0o600); err != nil {
		return fmt.Errorf("save digest cache: %w", err)
	}
	return nil
}

func keyOf(path string, fi os.FileInfo) hashKey {
	dev, ino, ctime := fileID(fi)
	return hashKey{path: path, size: fi.Size(), mtimeNS: fi.ModTime().UnixNano(), dev: dev, ino: ino, ctimeNS: ctime}
}

func (c *HashCache) get(k hashKey) (string, bool) {
	if c == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok && e.used != c.epoch {
		e.used = c.epoch
		c.entries[k] = e
	}
	return e.sum, ok
}

func (c *HashCache) put(k hashKey, sum string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedHashes {
		clear(c.entries)
	}
	c.entries[k] = hashEntry{sum: sum, used: c.epoch}
	c.dirty = true
}

// Forget drops what the cache holds for path, so the next Load hashes it again. The loader
// calls it when the copy it runs does not match the manifest although the scan found the file
// did: a cached digest was wrong, and keeping it would keep the version stuck.
func (c *HashCache) Forget(path string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.path == path {
			delete(c.entries, k)
			c.dirty = true
		}
	}
}

// cached returns the digest the cache holds for the file at path as it is now, and false
// when it holds none; it never reads the file's contents.
func (c *HashCache) cached(path string) (string, bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false, err
	}
	sum, ok := c.get(keyOf(path, fi))
	return sum, ok, nil
}

// Record adds the digest of the file at path that a caller computed itself, from bytes read
// between two stats of the open file (before and after), so a later scan need not read it
// again. Nothing is recorded when the stats differ: the file changed while it was read.
func (c *HashCache) Record(path string, before, after os.FileInfo, sum string) {
	if k := keyOf(path, before); k == keyOf(path, after) {
		c.put(k, sum)
	}
}

// hashFile returns the hex sha256 of the file at path, from the cache when the file is
// unchanged. The file is stat'ed through the open descriptor before and after reading, so a
// file being written while we read is noticed instead of cached with a bogus digest.
func (c *HashCache) hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return "", err
	}
	k := keyOf(path, before)
	if sum, ok := c.get(k); ok {
		return sum, nil
	}
	if c != nil {
		c.reads.Add(1)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	after, err := f.Stat()
	if err != nil {
		return "", err
	}
	if keyOf(path, after) != k {
		return "", errChangedWhileHashing
	}
	sum := hex.EncodeToString(h.Sum(nil))
	c.put(k, sum)
	return sum, nil
}
