package loader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// digestRecord mirrors one entry of the digest cache file.
type digestRecord struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	CtimeNS int64  `json:"ctime_ns"`
	SHA256  string `json:"sha256"`
}

type digestFile struct {
	Version int            `json:"version"`
	Entries []digestRecord `json:"entries"`
}

// TestDigestCacheNeverRunsAMismatch checks the safety of Config.DigestCache:
// a cache that vouches for a binary which does not match its manifest (here
// forged; in life a file changed without its ctime moving) makes the scan
// call the version valid, but the launch hashes the copy it would run,
// refuses it as incomplete, never executes it, keeps the older version
// serving, and forgets the entry, so the next scan sees the truth.
func TestDigestCacheNeverRunsAMismatch(t *testing.T) {
	cacheFile := filepath.Join(t.TempDir(), DigestCacheFileName)
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}

	// 1.0.1's manifest names the test skill's digest, but its file is a
	// script that would leave a mark if it ever ran.
	marker := filepath.Join(t.TempDir(), "ran")
	impostor := filepath.Join(t.TempDir(), "impostor")
	if err := os.WriteFile(impostor, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := testenv.SHA256File(testSkillBin)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.1", Binary: impostor, SHA256: want})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := filepath.EvalSymlinks(filepath.Join(dir, "skill"))
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(ep, &st); err != nil {
		t.Fatal(err)
	}
	forged := digestFile{Version: 1, Entries: []digestRecord{{
		Path: ep, Size: st.Size, MtimeNS: st.Mtim.Nano(), Dev: uint64(st.Dev), Ino: st.Ino,
		CtimeNS: st.Ctim.Nano(), SHA256: want,
	}}}
	b, _ := json.Marshal(forged)
	if err := os.WriteFile(cacheFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, func(c *Config) { c.Skills = root; c.DigestCache = cacheFile; c.Watch = false })
	h2.root = root
	h2.start()

	if got, err := h2.echo("alpha.echo"); err != nil || got.Version != "1.0.0" {
		t.Fatalf("alpha serves %+v (%v), want 1.0.0", got, err)
	}
	vs, _ := versionState(h2.status("alpha"), "1.0.1")
	if vs.State != StateIncomplete || !strings.Contains(vs.LastError, "checksum") {
		t.Errorf("1.0.1: state %s, error %q; want incomplete on the copy's checksum", vs.State, vs.LastError)
	}
	for _, e := range h2.events() {
		if e.Version == "1.0.1" && e.State == StateActive {
			t.Errorf("1.0.1 became active: %+v", e)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the binary that does not match its manifest was executed")
	}

	// The next scan hashes the file itself: the scan's own verdict is now
	// incomplete (sha256 mismatch), and the saved cache holds the truth.
	if err := h2.l.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	vs, _ = versionState(h2.status("alpha"), "1.0.1")
	if !strings.Contains(vs.LastError+strings.Join(problemStrings(h2, "1.0.1"), " "), "sha256 mismatch") {
		t.Errorf("after a rescan 1.0.1 is %s (%q, problems %v); want the scan's sha256 mismatch", vs.State, vs.LastError, problemStrings(h2, "1.0.1"))
	}
	b, err = os.ReadFile(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	var saved digestFile
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, r := range saved.Entries {
		sums[filepath.Base(filepath.Dir(r.Path))] = r.SHA256
	}
	impostorSum, err := testenv.SHA256File(impostor)
	if err != nil {
		t.Fatal(err)
	}
	if sums["1.0.0"] != want || sums["1.0.1"] != impostorSum {
		t.Errorf("saved digests %v; want the real digests of both files", sums)
	}
}

// problemStrings returns the scan's problems for version of alpha.
func problemStrings(h *harness, version string) []string {
	vs, _ := versionState(h.status("alpha"), version)
	var out []string
	for _, p := range vs.Problems {
		out = append(out, p.String())
	}
	return out
}
