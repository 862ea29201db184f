package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"sync"
)

// maxCachedHashes bounds the cache. Entries for files that went away are never looked up
// again; rather than track them, the cache starts over when it grows past any plausible tree.
const maxCachedHashes = 8192

// errChangedWhileHashing means the file was modified between the start and the end of hashing:
// a write in progress, so the digest means nothing yet.
var errChangedWhileHashing = errors.New("file changed while it was being hashed")

// HashCache remembers entrypoint digests so a rescan, which the watcher triggers on every
// change anywhere in the tree, only re-reads binaries that changed. The key is (path, size,
// mtime, device, inode, and on Linux ctime): a replaced or rewritten file misses the cache.
// The zero value is not usable; use NewHashCache. Safe for concurrent use.
type HashCache struct {
	mu      sync.Mutex // guards entries
	entries map[hashKey]string
}

type hashKey struct {
	path     string
	size     int64
	mtimeNS  int64
	dev, ino uint64
	ctimeNS  int64
}

// NewHashCache returns an empty cache.
func NewHashCache() *HashCache {
	return &HashCache{entries: make(map[hashKey]string)}
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
	sum, ok := c.entries[k]
	return sum, ok
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
	c.entries[k] = sum
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
