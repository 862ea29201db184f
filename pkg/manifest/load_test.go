package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadValid(t *testing.T) {
	root := t.TempDir()
	dir := writeVersion(t, root, "calc", "1.2.3", script, nil)
	v := Load(dir, Options{StrictModes: true, Hashes: NewHashCache()})
	if v.Status != StatusValid || len(v.Problems) != 0 {
		t.Fatalf("status %s, problems %v", v.Status, v.Problems)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if v.Skill != "calc" || v.Version != "1.2.3" || v.Dir != dir || v.Semver == nil || v.Semver.String() != "1.2.3" ||
		v.Manifest == nil || v.EntrypointPath != filepath.Join(realDir, "run") || len(v.Fingerprint) != 64 {
		t.Fatalf("unexpected version: %+v", v)
	}
}

func TestLoadRelativeDir(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	t.Chdir(root)
	v := Load(filepath.Join("calc", "1.0.0"), Options{})
	if v.Status != StatusValid || !filepath.IsAbs(v.Dir) {
		t.Fatalf("%s %s %v", v.Dir, v.Status, v.Problems)
	}
}

// TestLoadProblems has one case per folder rule. setup gets the version folder, already
// holding a valid manifest and a valid "run" script, and breaks one thing.
func TestLoadProblems(t *testing.T) {
	// rewrite replaces the manifest, keeping the skill and version of the folder.
	rewrite := func(t *testing.T, dir string, bin []byte, edit func(map[string]any)) {
		m := baseManifest(filepath.Base(filepath.Dir(dir)), filepath.Base(dir), bin)
		if edit != nil {
			edit(m)
		}
		writeFile(t, filepath.Join(dir, FileName), mustJSON(t, m), 0o644)
	}
	// entry makes "run" hold bin (with mode) and the manifest's checksum match it.
	entry := func(t *testing.T, dir string, bin []byte, mode os.FileMode) {
		writeFile(t, filepath.Join(dir, "run"), bin, mode)
		rewrite(t, dir, bin, nil)
	}
	symlink := func(t *testing.T, target, link string) {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	pointAt := func(ep string) func(map[string]any) { return func(m map[string]any) { m["entrypoint"] = ep } }

	cases := []struct {
		name    string
		skill   string // default "calc"
		version string // default "1.0.0"
		setup   func(t *testing.T, dir string)
		strict  bool
		status  Status
		path    string
		parts   []string
	}{
		{name: "native ELF", setup: func(t *testing.T, dir string) { entry(t, dir, nativeELF(t), 0o755) }, status: StatusValid},
		{name: "real ELF (the test binary)", setup: func(t *testing.T, dir string) {
			exe, err := os.Executable()
			if err != nil {
				t.Skip(err)
			}
			b, err := os.ReadFile(exe)
			if err != nil {
				t.Skip(err)
			}
			entry(t, dir, b, 0o755)
		}, status: StatusValid},
		{name: "name mismatch", setup: func(t *testing.T, dir string) {
			rewrite(t, dir, script, func(m map[string]any) { m["name"] = "other" })
		}, status: StatusInvalid, path: "$.name", parts: []string{`"other" does not match the skill folder "calc"`}},
		{name: "name mismatch by case", setup: func(t *testing.T, dir string) {
			rewrite(t, dir, script, func(m map[string]any) { m["name"] = "Calc" })
		}, status: StatusInvalid, path: "$.name", parts: []string{`"Calc" does not match the skill folder "calc"`}},
		{name: "version mismatch", setup: func(t *testing.T, dir string) {
			rewrite(t, dir, script, func(m map[string]any) { m["version"] = "1.0.1" })
		}, status: StatusInvalid, path: "$.version", parts: []string{`"1.0.1" does not match the version folder "1.0.0"`}},
		{name: "folder not semver", version: "v1.0.0", setup: func(t *testing.T, dir string) {}, status: StatusInvalid, path: "folder", parts: []string{`"v1.0.0" is not a strict semantic version`}},
		{name: "folder named latest", version: "latest", setup: func(t *testing.T, dir string) {}, status: StatusInvalid, path: "folder", parts: []string{`"latest"`}},
		{name: "bad skill folder name", skill: "Calc", setup: func(t *testing.T, dir string) {}, status: StatusInvalid, path: "skill-folder", parts: []string{`"Calc" is not a valid skill name`}},
		{name: "entrypoint dotdot", setup: func(t *testing.T, dir string) { rewrite(t, dir, script, pointAt("../run")) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{`"../run" escapes the version folder`}},
		{name: "entrypoint absolute", setup: func(t *testing.T, dir string) { rewrite(t, dir, script, pointAt(filepath.Join(dir, "run"))) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"absolute path"}},
		{name: "symlink out, absolute", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			symlink(t, "/bin/sh", filepath.Join(dir, "run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{`"run" escapes the version folder`, `"/bin/sh"`}},
		{name: "symlink out, relative", setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "..", "outside"), script, 0o755)
			os.Remove(filepath.Join(dir, "run"))
			symlink(t, "../outside", filepath.Join(dir, "run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"escapes the version folder", `"../outside"`}},
		{name: "symlink out and back in", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			writeFile(t, filepath.Join(dir, "real"), script, 0o755)
			symlink(t, "../1.0.0/real", filepath.Join(dir, "run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"escapes the version folder"}},
		{name: "symlink folder out", setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "..", "elsewhere", "run"), script, 0o755)
			symlink(t, "../elsewhere", filepath.Join(dir, "bin"))
			rewrite(t, dir, script, pointAt("bin/run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{`"bin/run" escapes`, `symlink "bin"`}},
		{name: "symlink inside", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			writeFile(t, filepath.Join(dir, "bin", "real"), script, 0o755)
			symlink(t, "bin/real", filepath.Join(dir, "run"))
		}, status: StatusValid},
		{name: "absolute symlink inside", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			writeFile(t, filepath.Join(dir, "bin", "real"), script, 0o755)
			real, _ := filepath.EvalSymlinks(dir)
			symlink(t, filepath.Join(real, "bin", "real"), filepath.Join(dir, "run"))
		}, status: StatusValid},
		{name: "symlink loop", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			symlink(t, "loop", filepath.Join(dir, "run"))
			symlink(t, "run", filepath.Join(dir, "loop"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{`"run" is a symlink loop`}},
		{name: "self symlink", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			symlink(t, "run", filepath.Join(dir, "run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"symlink loop"}},
		{name: "dangling symlink inside", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			symlink(t, "not-yet", filepath.Join(dir, "run"))
		}, status: StatusIncomplete, path: "$.entrypoint", parts: []string{"does not exist", "incomplete"}},
		{name: "not executable", setup: func(t *testing.T, dir string) { entry(t, dir, script, 0o644) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{`"run" is not executable (mode 0644)`}},
		{name: "entrypoint is a folder", setup: func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "run"))
			os.Mkdir(filepath.Join(dir, "run"), 0o755)
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"a folder, not a file"}},
		{name: "entrypoint under a file", setup: func(t *testing.T, dir string) { rewrite(t, dir, script, pointAt("run/x")) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"not a folder"}},
		{name: "ELF for another arch", setup: func(t *testing.T, dir string) { entry(t, dir, foreignELF(), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"is an ELF binary for EM_", "rebuild it with GOARCH="}},
		{name: "corrupt ELF", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("\x7fELF\x02\x01garbage"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"not a valid one"}},
		{name: "ELF object file", setup: func(t *testing.T, dir string) {
			b := nativeELF(t)
			b[16] = 1 // e_type = ET_REL (little-endian low byte)
			entry(t, dir, b, 0o755)
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"ET_REL", "not an executable"}},
		{name: "script with missing interpreter", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("#!/nonexistent/interp\n"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{`interpreter "/nonexistent/interp", which does not exist`}},
		{name: "script with relative interpreter", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("#!python3\n"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"not an absolute path"}},
		{name: "script with non-executable interpreter", setup: func(t *testing.T, dir string) {
			entry(t, dir, []byte("#!"+filepath.Join(dir, FileName)+"\n"), 0o755)
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"not an executable file"}},
		{name: "script with CRLF", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("#!/bin/sh\r\necho\r\n"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"Windows line endings"}},
		{name: "script with no interpreter", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("#!  \n"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"names no interpreter"}},
		{name: "script with env", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("#!/usr/bin/env sh\necho\n"), 0o755) },
			status: StatusValid},
		{name: "neither ELF nor script", setup: func(t *testing.T, dir string) { entry(t, dir, []byte("MZ\x90\x00 windows"), 0o755) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"neither an ELF executable nor"}},
		{name: "checksum mismatch", setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "run"), script[:5], 0o755) // half-copied
		}, status: StatusIncomplete, path: "$.sha256", parts: []string{"sha256 mismatch (manifest " + sum(script)[:12] + "…, file " + sum(script[:5])[:12] + "…)", "incomplete"}},
		{name: "missing entrypoint", setup: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "run")) },
			status: StatusIncomplete, path: "$.entrypoint", parts: []string{`"run" does not exist`, "incomplete"}},
		{name: "missing manifest", setup: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, FileName)) },
			status: StatusIncomplete, path: "manifest", parts: []string{"manifest.json is missing"}},
		{name: "empty manifest", setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, FileName), nil, 0o644) },
			status: StatusIncomplete, path: "$", parts: []string{"empty"}},
		{name: "truncated manifest", setup: func(t *testing.T, dir string) {
			b := mustJSON(t, baseManifest("calc", "1.0.0", script))
			writeFile(t, filepath.Join(dir, FileName), b[:len(b)-10], 0o644)
		}, status: StatusIncomplete, path: "$", parts: []string{"ends early"}},
		{name: "invalid manifest JSON", setup: func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, FileName), []byte("{oops}"), 0o644) },
			status: StatusInvalid, path: "$", parts: []string{"invalid JSON at line 1"}},
		{name: "invalid wins over incomplete", setup: func(t *testing.T, dir string) {
			rewrite(t, dir, []byte("other bytes"), func(m map[string]any) { m["name"] = "other" })
		}, status: StatusInvalid, path: "$.sha256", parts: []string{"sha256 mismatch"}},
		{name: "manifest is a symlink", setup: func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, FileName), filepath.Join(dir, "real.json"))
			symlink(t, "real.json", filepath.Join(dir, FileName))
		}, status: StatusInvalid, path: "manifest", parts: []string{"is a symlink"}},
		{name: "manifest over size cap", setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, FileName), []byte(strings.Repeat(" ", MaxManifestBytes+1)), 0o644)
		}, status: StatusInvalid, path: "manifest", parts: []string{"over the 65536-byte limit", "not read"}},
		{name: "strict: world-writable version folder", strict: true, setup: func(t *testing.T, dir string) { os.Chmod(dir, 0o777) },
			status: StatusInvalid, path: "folder", parts: []string{"version folder", "world-writable (mode 0777)"}},
		{name: "strict off: world-writable version folder", setup: func(t *testing.T, dir string) { os.Chmod(dir, 0o777) }, status: StatusValid},
		{name: "strict: group-writable skill folder", strict: true, setup: func(t *testing.T, dir string) { os.Chmod(filepath.Dir(dir), 0o775) },
			status: StatusInvalid, path: "skill-folder", parts: []string{"group-writable (mode 0775)"}},
		{name: "strict: world-writable root", strict: true, setup: func(t *testing.T, dir string) { os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o777) },
			status: StatusInvalid, path: "root", parts: []string{"skills root", "world-writable"}},
		{name: "strict: world-writable entrypoint", strict: true, setup: func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "run"), 0o757) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{`entrypoint "run"`, "world-writable (mode 0757)"}},
		{name: "strict: group-writable manifest", strict: true, setup: func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, FileName), 0o664) },
			status: StatusInvalid, path: "manifest", parts: []string{"group-writable"}},
		{name: "strict: world-writable folder on the way to the entrypoint", strict: true, setup: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "bin", "run"), script, 0o755)
			os.Chmod(filepath.Join(dir, "bin"), 0o777)
			rewrite(t, dir, script, pointAt("bin/run"))
		}, status: StatusInvalid, path: "$.entrypoint", parts: []string{"folder bin", "world-writable"}},
		{name: "strict: foreign-owned entrypoint", strict: true, setup: func(t *testing.T, dir string) { chown(t, filepath.Join(dir, "run")) },
			status: StatusInvalid, path: "$.entrypoint", parts: []string{"owned by uid 12345"}},
		{name: "strict: foreign-owned version folder", strict: true, setup: func(t *testing.T, dir string) { chown(t, dir) },
			status: StatusInvalid, path: "folder", parts: []string{"owned by uid 12345"}},
		{name: "strict: foreign-owned manifest", strict: true, setup: func(t *testing.T, dir string) { chown(t, filepath.Join(dir, FileName)) },
			status: StatusInvalid, path: "manifest", parts: []string{"owned by uid 12345"}},
		{name: "strict off: foreign-owned entrypoint", setup: func(t *testing.T, dir string) { chown(t, filepath.Join(dir, "run")) }, status: StatusValid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skill, version := c.skill, c.version
			if skill == "" {
				skill = "calc"
			}
			if version == "" {
				version = "1.0.0"
			}
			dir := writeVersion(t, t.TempDir(), skill, version, script, nil)
			c.setup(t, dir)
			v := Load(dir, Options{StrictModes: c.strict})
			if v.Status != c.status {
				t.Fatalf("status %s, want %s; problems: %v", v.Status, c.status, v.Problems)
			}
			if c.status == StatusValid {
				if len(v.Problems) != 0 || v.EntrypointPath == "" {
					t.Fatalf("valid with problems %v or no entrypoint path", v.Problems)
				}
				return
			}
			if v.EntrypointPath != "" {
				t.Errorf("EntrypointPath %q set on a %s version", v.EntrypointPath, v.Status)
			}
			if !hasProblem(v.Problems, c.path, c.parts...) {
				t.Fatalf("want a problem at %s containing %q; got %v", c.path, c.parts, v.Problems)
			}
			for _, p := range v.Problems {
				if p.Path == "" || p.Message == "" {
					t.Errorf("empty problem %#v", p)
				}
			}
		})
	}
}

func chown(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chown to another uid needs root")
	}
	if err := os.Lchown(path, 12345, 12345); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMissingFolder(t *testing.T) {
	v := Load(filepath.Join(t.TempDir(), "calc", "1.0.0"), Options{})
	if v.Status != StatusInvalid || !hasProblem(v.Problems, "folder", "cannot read version folder") {
		t.Fatalf("%s %v", v.Status, v.Problems)
	}
}

func TestFingerprint(t *testing.T) {
	root := t.TempDir()
	dir := writeVersion(t, root, "calc", "1.0.0", script, nil)
	opts := Options{Hashes: NewHashCache()}
	a := Load(dir, opts)
	if b := Load(dir, opts); b.Fingerprint != a.Fingerprint {
		t.Fatal("fingerprint not stable")
	}

	// A manifest change that keeps it valid changes the fingerprint.
	writeVersion(t, root, "calc", "1.0.0", script, func(m map[string]any) { m["description"] = "Adds more numbers." })
	b := Load(dir, opts)
	if b.Status != StatusValid || b.Fingerprint == a.Fingerprint {
		t.Fatalf("manifest change: %s %v, same fingerprint %v", b.Status, b.Problems, b.Fingerprint == a.Fingerprint)
	}

	// A binary change under the same manifest changes it too (and is a mismatch).
	writeFile(t, filepath.Join(dir, "run"), []byte("#!/bin/sh\necho bye\n"), 0o755)
	c := Load(dir, opts)
	if c.Status != StatusIncomplete || c.Fingerprint == b.Fingerprint {
		t.Fatalf("binary change: %s, same fingerprint %v", c.Status, c.Fingerprint == b.Fingerprint)
	}
}

func TestHashCache(t *testing.T) {
	root := t.TempDir()
	dir := writeVersion(t, root, "calc", "1.0.0", script, nil)
	cache := NewHashCache()
	run := filepath.Join(dir, "run")
	s1, err := cache.hashFile(run)
	if err != nil || s1 != sum(script) {
		t.Fatalf("%v %s", err, s1)
	}
	if len(cache.entries) != 1 {
		t.Fatalf("entries %d", len(cache.entries))
	}
	// Poison the cached value: an unchanged file must be served from the cache...
	for k := range cache.entries {
		cache.entries[k] = hashEntry{sum: "cached"}
	}
	if s, _ := cache.hashFile(run); s != "cached" {
		t.Fatalf("unchanged file re-hashed: %s", s)
	}
	// ...and a replaced file (same size, same mtime, new inode) must not be.
	fi, _ := os.Stat(run)
	other := []byte("#!/bin/sh\necho HELLO\n")
	tmp := filepath.Join(dir, ".tmp")
	writeFile(t, tmp, other, 0o755)
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, run); err != nil {
		t.Fatal(err)
	}
	if s, _ := cache.hashFile(run); s != sum(other) {
		t.Fatalf("replaced file served from cache: %s", s)
	}
	// A nil cache hashes every time.
	var nilCache *HashCache
	if s, err := nilCache.hashFile(run); err != nil || s != sum(other) {
		t.Fatalf("nil cache: %v %s", err, s)
	}
}

// TestDeferHash: with Options.DeferHash a Load never reads an entrypoint the cache has no
// digest for, and gives it the fingerprint of a matching file, so what a caller launches
// under it is the same version a hashing scan finds afterwards; a digest in the cache
// (recorded by whoever read the file) still decides the verdict.
func TestDeferHash(t *testing.T) {
	root := t.TempDir()
	good := writeVersion(t, root, "calc", "1.0.0", script, nil)
	bad := writeVersion(t, root, "calc", "1.0.1", script, nil)
	writeFile(t, filepath.Join(bad, "run"), []byte("#!/bin/sh\necho not the manifest's\n"), 0o755)

	cache := NewHashCache()
	deferred := Options{Hashes: cache, DeferHash: true}
	g, b := Load(good, deferred), Load(bad, deferred)
	if cache.Reads() != 0 {
		t.Fatalf("a deferred Load read %d entrypoints", cache.Reads())
	}
	for _, v := range []Version{g, b} {
		if v.Status != StatusValid || !v.HashDeferred || v.EntrypointPath == "" {
			t.Fatalf("%s deferred: %s %v deferred=%v path %q; want valid, deferred, with its path", v.Version, v.Status, v.Problems, v.HashDeferred, v.EntrypointPath)
		}
	}
	gFull := Load(good, Options{Hashes: NewHashCache()})
	if gFull.Status != StatusValid || gFull.HashDeferred || gFull.Fingerprint != g.Fingerprint {
		t.Fatalf("hashed 1.0.0: %s deferred=%v, same fingerprint %v; want valid with the deferred Load's fingerprint", gFull.Status, gFull.HashDeferred, gFull.Fingerprint == g.Fingerprint)
	}
	if bFull := Load(bad, Options{}); bFull.Status != StatusIncomplete {
		t.Fatalf("hashed 1.0.1: %s, want incomplete", bFull.Status)
	}

	// Digests recorded from reads the caller made: a hit is a real verdict, and no read.
	record := func(dir string) {
		t.Helper()
		path := filepath.Join(dir, "run")
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cache.Record(path, fi, fi, sum(data))
	}
	record(good)
	record(bad)
	g, b = Load(good, deferred), Load(bad, deferred)
	if cache.Reads() != 0 || g.HashDeferred || b.HashDeferred {
		t.Fatalf("after Record: %d reads, deferred %v %v; want no read and no deferral", cache.Reads(), g.HashDeferred, b.HashDeferred)
	}
	if g.Status != StatusValid || b.Status != StatusIncomplete || g.Fingerprint != gFull.Fingerprint {
		t.Fatalf("after Record: 1.0.0 %s, 1.0.1 %s; want valid (same fingerprint) and incomplete", g.Status, b.Status)
	}

	// A file that changed between the two stats is not recorded.
	path, _ := filepath.EvalSymlinks(filepath.Join(good, "run"))
	before, _ := os.Stat(path)
	writeFile(t, path, []byte("#!/bin/sh\necho changed\n"), 0o755)
	after, _ := os.Stat(path)
	cache.Record(path, before, after, "0000000000000000000000000000000000000000000000000000000000000000")
	if v := Load(good, deferred); !v.HashDeferred {
		t.Fatalf("a digest recorded across a change was used: %s %v", v.Status, v.Problems)
	}
}
