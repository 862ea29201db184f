package loader

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
)

func TestBinCacheSharesOneVerifiedCopy(t *testing.T) {
	c := newBinCache(filepath.Join(t.TempDir(), "bin"), -1, nil)
	sum, _ := testenv.SHA256File(testSkillBin)
	var wg sync.WaitGroup
	paths := make([]string, 8)
	releases := make([]func(), 8)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, rel, err := c.acquire(testSkillBin, sum)
			if err != nil {
				t.Error(err)
				return
			}
			paths[i], releases[i] = p, rel
		}()
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("two copies of one content: %s and %s", paths[0], p)
		}
	}
	if fi, err := os.Stat(paths[0]); err != nil || fi.Mode().Perm() != 0o500 {
		t.Fatalf("copy: %v %v", fi, err)
	}
	for _, rel := range releases[:7] {
		rel()
		rel() // twice is harmless
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Fatal("copy removed while still in use")
	}
	releases[7]()
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatal("copy kept after its last user left")
	}
	// A wrong checksum is incomplete, and leaves nothing behind.
	if _, _, err := c.acquire(testSkillBin, "00"+sum[2:]); !errors.Is(err, errIncomplete) {
		t.Fatalf("bad checksum: %v", err)
	}
	if entries, _ := os.ReadDir(c.dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
