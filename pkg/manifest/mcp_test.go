package manifest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeMCPVersion writes root/skill/version as an MCP server's folder: a
// script, a module beside it, and a manifest (after edit) whose digest
// matches them.
func writeMCPVersion(t *testing.T, root, skill, version string, edit func(m map[string]any)) string {
	t.Helper()
	dir := filepath.Join(root, skill, version)
	writeFile(t, filepath.Join(dir, "server.js"), []byte("console.log('hi')\n"), 0o644)
	writeFile(t, filepath.Join(dir, "node_modules", "dep", "index.js"), []byte("module.exports = 1\n"), 0o644)
	d, err := FolderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{
		"manifest_version": 1, "name": skill, "version": version, "description": "Remembers things.",
		"runtime": "mcp", "command": "node", "args": []any{"server.js"}, "digest": DigestPrefix + d,
	}
	if edit != nil {
		edit(m)
	}
	writeFile(t, filepath.Join(dir, FileName), mustJSON(t, m), 0o644)
	return dir
}

func TestFolderDigestIsSha256sum(t *testing.T) {
	dir := writeMCPVersion(t, t.TempDir(), "memory", "1.0.0", nil)
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum not found")
	}
	cmd := exec.Command("sh", "-c", `find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := FolderDigest(dir)
	if err != nil || got != strings.TrimSpace(string(out)) {
		t.Fatalf("FolderDigest = %s, %v; the documented shell line prints %s", got, err, out)
	}
}

func TestLoadMCP(t *testing.T) {
	root := t.TempDir()
	dir := writeMCPVersion(t, root, "memory", "1.0.0", nil)
	hashes := NewHashCache()
	v := Load(dir, Options{Hashes: hashes})
	if v.Status != StatusValid || v.Manifest.RuntimeName() != RuntimeMCP || v.EntrypointPath != "" || len(v.Fingerprint) != 64 {
		t.Fatalf("status %s, problems %v, %+v", v.Status, v.Problems, v)
	}
	// A rescan of an unchanged folder reads nothing.
	reads := hashes.Reads()
	if again := Load(dir, Options{Hashes: hashes}); again.Fingerprint != v.Fingerprint || hashes.Reads() != reads {
		t.Errorf("rescan: fingerprint %s (was %s), %d files read", again.Fingerprint, v.Fingerprint, hashes.Reads()-reads)
	}
	// DeferHash leaves the folder to the copy's check.
	if d := Load(dir, Options{DeferHash: true}); d.Status != StatusValid || !d.HashDeferred || d.Fingerprint != v.Fingerprint {
		t.Errorf("deferred: %s %v, fingerprint %s", d.Status, d.HashDeferred, d.Fingerprint)
	}
	// A changed file is a copy in progress.
	writeFile(t, filepath.Join(dir, "node_modules", "dep", "index.js"), []byte("module.exports = 2\n"), 0o644)
	if c := Load(dir, Options{Hashes: hashes}); c.Status != StatusIncomplete || !hasProblem(c.Problems, "$.digest", "folder digest mismatch") {
		t.Errorf("changed file: %s %v", c.Status, c.Problems)
	}
}

func TestLoadMCPProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(m map[string]any)
		setup  func(t *testing.T, dir string)
		status Status
		path   string
		want   string
	}{
		{"no command", func(m map[string]any) { delete(m, "command") }, nil, StatusInvalid, "$.command", `is required but missing (runtime "mcp")`},
		{"no digest", func(m map[string]any) { delete(m, "digest") }, nil, StatusInvalid, "$.digest", "is required"},
		{"entrypoint too", func(m map[string]any) { m["entrypoint"] = "server.js" }, nil, StatusInvalid, "$.entrypoint", `is not used by runtime "mcp"`},
		{"uses", func(m map[string]any) { m["uses"] = []string{"calc.*"} }, nil, StatusInvalid, "$.uses", `is not used by runtime "mcp"`},
		{"sha256 too", func(m map[string]any) { m["sha256"] = strings.Repeat("a", 64) }, nil, StatusInvalid, "$.sha256", "remove it"},
		{"absolute command", func(m map[string]any) { m["command"] = "/usr/bin/node" }, nil, StatusInvalid, "$.command", "absolute path"},
		{"escaping command", func(m map[string]any) { m["command"] = "../x/server" }, nil, StatusInvalid, "$.command", "escapes the version folder"},
		{"odd name", func(m map[string]any) { m["command"] = "No de" }, nil, StatusInvalid, "$.command", "neither an interpreter name"},
		{"bare digest", func(m map[string]any) { m["digest"] = strings.Repeat("a", 64) }, nil, StatusInvalid, "$.digest", "sha256:"},
		{"unknown runtime", func(m map[string]any) { m["runtime"] = "wasm" }, nil, StatusInvalid, "$.runtime", "go-plugin"},
		{"command in a go-plugin manifest", func(m map[string]any) { delete(m, "runtime") }, nil, StatusInvalid, "$.command", `is not used by runtime "go-plugin"`},
		{"missing command file", func(m map[string]any) { m["command"] = "./bin/server" }, nil, StatusIncomplete, "$.command", "does not exist"},
		{"command file not executable", func(m map[string]any) { m["command"] = "./server.js" }, nil, StatusInvalid, "$.command", "not executable"},
		{"symbolic link", nil, func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "node_modules", "evil")); err != nil {
				t.Fatal(err)
			}
		}, StatusInvalid, "folder", "node_modules/evil is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeMCPVersion(t, t.TempDir(), "memory", "1.0.0", tc.edit)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			v := Load(dir, Options{})
			if v.Status != tc.status || !hasProblem(v.Problems, tc.path, tc.want) {
				t.Errorf("status %s, problems %v; want %s with %s: %q", v.Status, v.Problems, tc.status, tc.path, tc.want)
			}
		})
	}
}

func TestFolderDigestRefusesLinks(t *testing.T) {
	dir := writeMCPVersion(t, t.TempDir(), "memory", "1.0.0", nil)
	if err := os.Symlink("server.js", filepath.Join(dir, "link.js")); err != nil {
		t.Fatal(err)
	}
	if _, err := FolderDigest(dir); !errors.Is(err, ErrUnsupportedFile) {
		t.Fatalf("want ErrUnsupportedFile, got %v", err)
	}
}
