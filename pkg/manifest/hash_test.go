package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestHashCacheSavedAndOpened checks the digest cache across a restart:
// what a scan used is saved, a new cache opened from the file answers an
// unchanged file without reading it, a changed file misses, what the last
// scan did not look at is dropped, and an unusable file only costs a cold
// cache, with a warning that names it.
func TestHashCacheSavedAndOpened(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("persisted only where files have an inode and a ctime")
	}
	root := t.TempDir()
	a := filepath.Join(writeVersion(t, root, "alpha", "1.0.0", script, nil), "run")
	b := filepath.Join(writeVersion(t, root, "beta", "1.0.0", script, nil), "run")
	file := filepath.Join(t.TempDir(), "digests.json")

	c := NewHashCache()
	for _, p := range []string{a, b} {
		if s, err := c.hashFile(p); err != nil || s != sum(script) {
			t.Fatalf("%s: %v %s", p, err, s)
		}
	}
	if err := c.Save(file); err != nil {
		t.Fatal(err)
	}
	records := readRecords(t, file)
	if len(records) != 2 {
		t.Fatalf("saved %d entries, want 2: %+v", len(records), records)
	}

	// Poison the saved digest of a: a cache opened from the file must answer
	// from it, which proves a was not read again.
	poisoned := strings.Repeat("ab", 32)
	for i := range records {
		if records[i].Path == a {
			records[i].SHA256 = poisoned
		}
	}
	writeRecords(t, file, records)
	c2, warning := OpenHashCache(file)
	if warning != "" {
		t.Fatal(warning)
	}
	if s, _ := c2.hashFile(a); s != poisoned {
		t.Fatalf("unchanged file after a restart: got %s, want the saved digest", s)
	}
	// b is rewritten with other bytes: its key changes, so it is hashed.
	other := []byte("#!/bin/sh\necho other\n")
	writeFile(t, b, other, 0o755)
	if s, _ := c2.hashFile(b); s != sum(other) {
		t.Fatalf("changed file served from the saved cache: %s", s)
	}
	// Forget drops a's entry: the file is read again.
	c2.Forget(a)
	if s, _ := c2.hashFile(a); s != sum(script) {
		t.Fatalf("after Forget: %s", s)
	}
	if err := c2.Save(file); err != nil {
		t.Fatal(err)
	}
	// One record per path: the entry b had in the file is stale, not saved beside the new one.
	got := map[string]string{}
	records = readRecords(t, file)
	for _, r := range records {
		got[r.Path] = r.SHA256
	}
	if len(records) != 2 || got[a] != sum(script) || got[b] != sum(other) {
		t.Fatalf("second save: %+v", records)
	}
	// A scan that no longer sees b (its folder removed) drops it at the next Save.
	if _, err := c2.hashFile(a); err != nil {
		t.Fatal(err)
	}
	if err := c2.Save(file); err != nil {
		t.Fatal(err)
	}
	if rs := readRecords(t, file); len(rs) != 1 || rs[0].Path != a {
		t.Fatalf("after a scan of a alone: %+v", rs)
	}

	// Unusable files: a cold cache and a warning naming the file.
	for name, data := range map[string]string{"torn": `{"version":1,"entries":[{"pa`, "future": `{"version":2,"entries":[]}`} {
		if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		c3, warning := OpenHashCache(file)
		if !strings.Contains(warning, file) || len(c3.entries) != 0 {
			t.Errorf("%s file: warning %q, %d entries", name, warning, len(c3.entries))
		}
	}
	// A record that is not a digest is skipped, not trusted.
	writeRecords(t, file, []hashRecord{{Path: a, Size: 1, Ino: 1, CtimeNS: 1, SHA256: "../../etc"}})
	if c4, warning := OpenHashCache(file); warning != "" || len(c4.entries) != 0 {
		t.Errorf("bad record: warning %q, %d entries", warning, len(c4.entries))
	}
	// No file at all is simply empty.
	if c5, warning := OpenHashCache(filepath.Join(t.TempDir(), "none.json")); warning != "" || len(c5.entries) != 0 {
		t.Errorf("missing file: warning %q, %d entries", warning, len(c5.entries))
	}
}

func readRecords(t *testing.T, file string) []hashRecord {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var hf hashFile
	if err := json.Unmarshal(b, &hf); err != nil {
		t.Fatal(err)
	}
	return hf.Entries
}

func writeRecords(t *testing.T, file string, rs []hashRecord) {
	t.Helper()
	b, err := json.Marshal(hashFile{Version: 1, Entries: rs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
