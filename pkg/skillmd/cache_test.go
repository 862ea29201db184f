package skillmd

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestCacheReadsOnlyWhatChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notes")
	write(t, dir, "SKILL.md", skillMD("notes"))
	write(t, dir, "references/a.md", "alpha")
	write(t, dir, "references/b.md", "bravo")
	sparse(t, filepath.Join(dir, "assets/big.bin"), MaxFileBytes+1) // not served, never read

	c := NewCache()
	step := func(name string, wantReads int64) Skill {
		t.Helper()
		before := c.Reads()
		s := c.Load(dir, Unversioned)
		if s.Status != StatusValid {
			t.Fatalf("%s: %s %v", name, s.Status, s.Problems.Errors())
		}
		if got := c.Reads() - before; got != wantReads {
			t.Errorf("%s: read %d files, want %d", name, got, wantReads)
		}
		if plain := Load(dir, Unversioned); plain.Digest != s.Digest {
			t.Errorf("%s: cached digest %s, uncached %s", name, s.Digest, plain.Digest)
		}
		return s
	}
	first := step("first load", 3)
	if again := step("unchanged", 0); again.Digest != first.Digest {
		t.Error("an unchanged folder changed its digest")
	}

	write(t, dir, "references/a.md", "ALPHA") // same size, new content
	edited := step("one file edited", 1)
	if edited.Digest == first.Digest {
		t.Error("the edit did not change the digest")
	}

	p := filepath.Join(dir, "references/b.md")
	later := time.Now().Add(time.Hour)
	must(t, os.Chtimes(p, later, later))
	if touched := step("one file touched", 1); touched.Digest != edited.Digest {
		t.Error("a touch changed the digest")
	}

	if runtime.GOOS == "linux" {
		// Rewritten in place, same size, modification time put back (cp -p, rsync -t): only
		// the change time tells, and it must.
		mtime := mustStat(t, p).ModTime()
		must(t, os.WriteFile(p, []byte("BRAVO"), 0o644))
		must(t, os.Chtimes(p, mtime, mtime))
		if sneaky := step("rewritten with its mtime restored", 1); sneaky.Digest == edited.Digest {
			t.Error("the rewrite did not change the digest")
		}
	}
}

func TestCacheConcurrentAndBounded(t *testing.T) {
	c := NewCache()
	var wg sync.WaitGroup
	digests := make([]string, 8)
	for i := range digests {
		wg.Go(func() {
			skills, err := c.Scan("testdata/skills")
			if err != nil || len(skills) != 3 {
				t.Errorf("scan: %d skills, %v", len(skills), err)
				return
			}
			digests[i] = skills[2].Digest
		})
	}
	wg.Wait()
	for _, d := range digests[1:] {
		if d != digests[0] {
			t.Fatalf("digests differ: %q", digests)
		}
	}

	for i := range maxCachedSums + 10 {
		c.put(stamp{path: itoa(i)}, [32]byte{})
	}
	if n := len(c.sums); n > maxCachedSums {
		t.Errorf("cache holds %d sums", n)
	}
}
