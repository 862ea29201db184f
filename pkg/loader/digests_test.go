package loader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
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

// installImpostor installs alpha 1.0.0, the test skill, and alpha 1.0.1,
// whose manifest names the test skill's digest (want) but whose file is the
// script impostor, which creates marker if it ever runs. It returns 1.0.1's
// folder.
func installImpostor(t *testing.T, root string) (dir, impostor, marker, want string) {
	t.Helper()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(t.TempDir(), "ran")
	impostor = filepath.Join(t.TempDir(), "impostor")
	if err := os.WriteFile(impostor, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := testenv.SHA256File(testSkillBin)
	if err != nil {
		t.Fatal(err)
	}
	dir, err = testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.1", Binary: impostor, SHA256: want})
	if err != nil {
		t.Fatal(err)
	}
	return dir, impostor, marker, want
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
	dir, impostor, marker, want := installImpostor(t, root)
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
	if vs.State != StateIncomplete || !strings.Contains(vs.LastError, "sha256 mismatch") {
		t.Errorf("1.0.1: state %s, error %q; want incomplete on the copy's sha256 mismatch", vs.State, vs.LastError)
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
	if !strings.Contains(strings.Join(problemStrings(h2, "1.0.1"), " "), "sha256 mismatch") {
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

// TestFirstStartReadsEachBinaryOnce: the first scan defers hashing to the
// launch, whose copy is hashed as it is made. A version whose file does not
// match its manifest is still never executed (the copy's check refuses it),
// the older version serves, and the scan that follows in the background
// reads only what no launch read: here the refused file, not the one that
// runs.
func TestFirstStartReadsEachBinaryOnce(t *testing.T) {
	root := t.TempDir()
	_, _, marker, _ := installImpostor(t, root)
	var mu sync.Mutex
	var trees []*manifest.Tree
	h := newHarness(t, func(c *Config) {
		c.Skills, c.Watch = root, false
		c.OnScan = func(tree *manifest.Tree, _ error) {
			mu.Lock()
			trees = append(trees, tree)
			mu.Unlock()
		}
	})
	h.root = root
	h.start()

	if got, err := h.echo("alpha.echo"); err != nil || got.Version != "1.0.0" {
		t.Fatalf("alpha serves %+v (%v), want 1.0.0", got, err)
	}
	scans := func() []*manifest.Tree {
		mu.Lock()
		defer mu.Unlock()
		return append([]*manifest.Tree(nil), trees...)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return len(scans()) >= 2 }) {
		t.Fatalf("%d scans; want the first start's and the one after it", len(scans()))
	}
	first, second := scans()[0], scans()[1]
	for _, v := range first.Versions {
		if !v.HashDeferred || v.Status != manifest.StatusValid {
			t.Errorf("first scan, %s: %s, deferred %v; want valid with its hash deferred", v.Version, v.Status, v.HashDeferred)
		}
	}
	for _, v := range second.Versions {
		wantStatus := map[string]manifest.Status{"1.0.0": manifest.StatusValid, "1.0.1": manifest.StatusIncomplete}[v.Version]
		if v.HashDeferred || v.Status != wantStatus {
			t.Errorf("second scan, %s: %s, deferred %v; want %s, hashed", v.Version, v.Status, v.HashDeferred, wantStatus)
		}
	}
	if n := h.l.hashes.Reads(); n != 1 {
		t.Errorf("the scans read %d entrypoints; want 1 (the refused one; the copy of 1.0.0 recorded its digest)", n)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the binary that does not match its manifest was executed")
	}
	if got, err := h.echo("alpha.echo"); err != nil || got.Version != "1.0.0" {
		t.Fatalf("after the second scan alpha serves %+v (%v), want 1.0.0", got, err)
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
