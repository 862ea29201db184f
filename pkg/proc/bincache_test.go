package proc

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
)

func TestBinCacheSharesOneVerifiedCopy(t *testing.T) {
	c := NewBinCache(filepath.Join(t.TempDir(), "bin"), -1, nil)
	testSkillBin := filepath.Join(t.TempDir(), "skill")
	if err := os.WriteFile(testSkillBin, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, _ := testenv.SHA256File(testSkillBin)
	var wg sync.WaitGroup
	paths := make([]string, 8)
	releases := make([]func(), 8)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, rel, err := c.Acquire(testSkillBin, sum)
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
	if _, _, err := c.Acquire(testSkillBin, "00"+sum[2:]); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("bad checksum: %v", err)
	}
	if entries, _ := os.ReadDir(c.dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// BenchmarkCopyVerified copies and hashes a 20 MB entrypoint, the size of a
// Go skill built with the SDK: what each distinct binary costs a start.
func BenchmarkCopyVerified(b *testing.B) {
	src := filepath.Join(b.TempDir(), "skill")
	data := make([]byte, 20<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(src, data, 0o755); err != nil {
		b.Fatal(err)
	}
	want := fmt.Sprintf("%x", sha256.Sum256(data))
	dir := b.TempDir()
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(dir, strconv.Itoa(i))
		if err := copyVerified(src, dst, want, nil); err != nil {
			b.Fatal(err)
		}
		os.Remove(dst)
	}
}
