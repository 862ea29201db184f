package skillmd

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// maxCachedSums bounds a Cache. Entries of files that went away are never looked up again;
// rather than track them, the cache starts over when it grows past any plausible tree.
const maxCachedSums = 16384

// Cache remembers the SHA-256 of every file a Load read, so a rescan, which the watcher
// triggers on any change anywhere in the tree, reads only SKILL.md and the files that changed.
// An entry is keyed on the file's path, device, inode, size and modification time, and on
// Linux its change time, which no user can set: a file replaced, rewritten or touched misses.
// A cached sum only decides the digest (whether to reload); what Open serves is always read
// from the file itself. The zero value is not usable; use NewCache. Safe for concurrent use.
type Cache struct {
	mu    sync.Mutex // guards sums
	sums  map[stamp][sha256.Size]byte
	reads atomic.Int64
}

// stamp is what a cached sum is keyed on.
type stamp struct {
	path             string
	id               fileID
	size             int64
	mtimeNS, ctimeNS int64
}

func stampOf(path string, fi fs.FileInfo) stamp {
	return stamp{path: path, id: fileIDOf(fi), size: fi.Size(), mtimeNS: fi.ModTime().UnixNano(), ctimeNS: ctimeOf(fi)}
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{sums: make(map[stamp][sha256.Size]byte)} }

// Reads counts the files read to hash them through this cache (hits do not count), for tests
// and for anyone measuring what a rescan costs.
func (c *Cache) Reads() int64 { return c.reads.Load() }

// Load is the package's Load, reading only the files the cache has no sum for. A nil Cache
// reads every file.
func (c *Cache) Load(dir string, layout Layout) Skill {
	return load(dir, layout, c)
}

// Scan is the package's Scan through the cache.
func (c *Cache) Scan(root string) ([]Skill, error) {
	return scan(root, c)
}

func (c *Cache) get(k stamp) ([sha256.Size]byte, bool) {
	if c == nil {
		return [sha256.Size]byte{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sum, ok := c.sums[k]
	return sum, ok
}

func (c *Cache) put(k stamp, sum [sha256.Size]byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sums) >= maxCachedSums {
		clear(c.sums)
	}
	c.sums[k] = sum
}

// fileSum returns the SHA-256 of a listed file: from the cache when the file's stamp is
// unchanged, else read through openChecked. A file whose stamp moves while it is read, or
// whose length is not the listed size, is ErrChanged: a write in progress.
func (c *Cache) fileSum(root *os.Root, dir string, f File) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	if f.stamp != (stamp{}) {
		if s, ok := c.get(f.stamp); ok {
			return s, nil
		}
	}
	file, err := openChecked(root, f.Path, f.id, MaxFileBytes)
	if err != nil {
		return sum, err
	}
	defer file.Close()
	before, err := file.Stat()
	if err != nil {
		return sum, err
	}
	if c != nil {
		c.reads.Add(1)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(file, f.Size+1))
	if err != nil {
		return sum, err
	}
	after, err := file.Stat()
	if err != nil {
		return sum, err
	}
	k := stampOf(filepath.Join(dir, f.Path), before)
	if n != f.Size || k != stampOf(k.path, after) {
		return sum, ErrChanged
	}
	h.Sum(sum[:0])
	c.put(k, sum)
	return sum, nil
}
