package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func versionsOf(vs []Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Skill+"/"+v.Version+":"+string(v.Status))
	}
	return out
}

func TestScan(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"1.2.0", "1.10.0", "1.0.0", "2.0.0-rc.1"} {
		writeVersion(t, root, "calc", v, script, nil)
	}
	writeVersion(t, root, "calc", "latest", script, nil)                               // folder not semver
	writeVersion(t, root, "calc", "3.0.0", []byte("partial"), func(m map[string]any) { // a copy in progress
		m["sha256"] = sum(script)
	})
	writeVersion(t, root, "policy", "0.1.0", script, func(m map[string]any) { m["name"] = "nope" })
	writeVersion(t, root, "Bad", "1.0.0", script, nil)
	writeVersion(t, root, "calc", ".1.5.0.tmp", script, nil) // ignored: staging
	writeVersion(t, root, "_staging", "1.0.0", script, nil)  // ignored: staging
	writeVersion(t, root, ".git", "1.0.0", script, nil)      // ignored: hidden
	writeFile(t, filepath.Join(root, "README.md"), []byte("hi"), 0o644)
	writeFile(t, filepath.Join(root, "calc", "notes.txt"), []byte("hi"), 0o644)
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}

	tree, err := Scan(root, Options{StrictModes: true, Hashes: NewHashCache()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Bad/1.0.0:invalid",
		"calc/1.0.0:valid", "calc/1.2.0:valid", "calc/1.10.0:valid", "calc/2.0.0-rc.1:valid",
		"calc/3.0.0:incomplete", "calc/latest:invalid",
		"policy/0.1.0:invalid",
	}
	if got := versionsOf(tree.Versions); !slices.Equal(got, want) {
		t.Fatalf("versions:\n got %v\nwant %v", got, want)
	}
	if got := versionsOf(tree.Valid("calc")); !slices.Equal(got, []string{"calc/2.0.0-rc.1:valid", "calc/1.10.0:valid", "calc/1.2.0:valid", "calc/1.0.0:valid"}) {
		t.Fatalf("Valid: %v", got)
	}
	if got := tree.Valid("policy"); len(got) != 0 {
		t.Fatalf("Valid(policy): %v", versionsOf(got))
	}
	if got := tree.Skills(); !slices.Equal(got, []string{"Bad", "calc", "empty", "policy"}) {
		t.Fatalf("Skills: %v", got)
	}
	if !hasProblem(tree.Problems, "Bad", `"Bad" is not a valid skill name`) {
		t.Errorf("no problem for the bad skill folder: %v", tree.Problems)
	}
	if !hasProblem(tree.Problems, "calc/notes.txt", "not a folder") {
		t.Errorf("stray file not reported: %v", tree.Problems)
	}
	if hasProblem(tree.Problems, "README.md") {
		t.Errorf("README.md at the root reported: %v", tree.Problems)
	}
	if tree.Root != root {
		t.Errorf("Root %q", tree.Root)
	}
}

func TestScanSamePrecedence(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	writeVersion(t, root, "calc", "1.0.0+build.7", script, nil)
	writeVersion(t, root, "calc", "0.9.0", script, nil)
	writeVersion(t, root, "other", "1.0.0", script, nil) // same semver, different skill: fine
	tree, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"calc/0.9.0:valid", "calc/1.0.0:invalid", "calc/1.0.0+build.7:invalid", "other/1.0.0:valid"}
	if got := versionsOf(tree.Versions); !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for _, v := range tree.Versions[1:3] {
		if !hasProblem(v.Problems, "folder", `"1.0.0"`, `"1.0.0+build.7"`, "same semver precedence") || v.EntrypointPath != "" {
			t.Errorf("%s: %v", v.Version, v.Problems)
		}
	}
	if got := versionsOf(tree.Valid("calc")); !slices.Equal(got, []string{"calc/0.9.0:valid"}) {
		t.Errorf("Valid: %v", got)
	}
}

func TestScanStrictRoot(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	tree, err := Scan(root, Options{StrictModes: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasProblem(tree.Problems, "root", "world-writable") {
		t.Errorf("tree problems: %v", tree.Problems)
	}
	if v := tree.Versions[0]; v.Status != StatusInvalid || !hasProblem(v.Problems, "root", "world-writable") {
		t.Errorf("version under a world-writable root: %s %v", v.Status, v.Problems)
	}
}

func TestScanUnreadableRoot(t *testing.T) {
	if _, err := Scan(filepath.Join(t.TempDir(), "missing"), Options{}); err == nil {
		t.Fatal("want an error for a missing root")
	}
	f := filepath.Join(t.TempDir(), "file")
	writeFile(t, f, nil, 0o644)
	if _, err := Scan(f, Options{}); err == nil {
		t.Fatal("want an error for a root that is a file")
	}
}

func TestScanFollowsSymlinkedVersionFolder(t *testing.T) {
	root := t.TempDir()
	build := t.TempDir()
	writeVersion(t, build, "calc", "1.0.0", script, nil)
	if err := os.MkdirAll(filepath.Join(root, "calc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(build, "calc", "1.0.0"), filepath.Join(root, "calc", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	tree, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(tree.Versions); !slices.Equal(got, []string{"calc/1.0.0:valid"}) {
		t.Fatalf("%v %v", got, tree.Versions[0].Problems)
	}
}

// TestScanConcurrent runs scans sharing one cache while files change, for the race detector.
func TestScanConcurrent(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0"} {
		writeVersion(t, root, "calc", v, script, nil)
		writeVersion(t, root, "other", v, script, nil)
	}
	opts := Options{Hashes: NewHashCache()}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := Scan(root, opts); err != nil {
					t.Error(err)
				}
			}
			if i == 0 {
				writeFile(t, filepath.Join(root, "calc", "1.0.0", "run"), []byte("#!/bin/sh\n"), 0o755)
			}
		}()
	}
	wg.Wait()
	tree, err := Scan(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(tree.Valid("calc")); len(got) != 3 {
		t.Fatalf("after the change: %v", got)
	}
}

func TestValidatePath(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	writeVersion(t, root, "calc", "1.1.0", script, func(m map[string]any) { m["bogus"] = 1 })
	writeVersion(t, root, "policy", "2.0.0", script, nil)

	cases := []struct {
		name string
		path string
		want []string
	}{
		{"version folder", filepath.Join(root, "calc", "1.1.0"), []string{"calc/1.1.0:invalid"}},
		{"manifest file", filepath.Join(root, "calc", "1.0.0", FileName), []string{"calc/1.0.0:valid"}},
		{"skill folder", filepath.Join(root, "calc"), []string{"calc/1.0.0:valid", "calc/1.1.0:invalid"}},
		{"root", root, []string{"calc/1.0.0:valid", "calc/1.1.0:invalid", "policy/2.0.0:valid"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, ps, err := ValidatePath(c.path, Options{})
			if err != nil || len(ps) != 0 {
				t.Fatalf("%v %v", err, ps)
			}
			if got := versionsOf(vs); !slices.Equal(got, c.want) {
				t.Fatalf("got %v want %v", got, c.want)
			}
		})
	}
	if _, _, err := ValidatePath(filepath.Join(root, "nope"), Options{}); err == nil {
		t.Error("missing path: want an error")
	}
	if _, _, err := ValidatePath(filepath.Join(root, "calc", "1.0.0", "run"), Options{}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file path: %v", err)
	}
	// A skill folder is judged together, so duplicate precedence is caught there too.
	writeVersion(t, root, "calc", "1.1.0+x", script, nil)
	vs, _, _ := ValidatePath(filepath.Join(root, "calc"), Options{})
	if !hasProblem(vs[2].Problems, "folder", "same semver precedence") {
		t.Errorf("%v", vs[2].Problems)
	}
}
