package testenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The npm MCP servers' paths inside the folder NPMServers returns.
const (
	EverythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	MemoryJS     = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
)

var npm struct {
	once      sync.Once
	dir, node string
	skip      string // why tests skip: no node or npm
	err       error
}

// NPMServers installs the public MCP servers from npm that the "mcp"
// runtime's tests run unmodified (scripts/install-mcp-servers.sh, once per
// test binary; CI runs it too) and returns their folder, one version folder
// for both, and the node an operator would allow. It skips the test, saying
// why, when node or npm is missing; any other install failure fails it.
func NPMServers(t testing.TB) (dir, node string) {
	t.Helper()
	npm.once.Do(func() {
		npm.dir, npm.skip, npm.err = runNodeScript("install-mcp-servers.sh")
		if npm.err == nil && npm.skip == "" {
			npm.node, npm.err = exec.LookPath("node")
		}
	})
	if npm.skip != "" {
		t.Skip("the npm MCP servers cannot be installed: " + npm.skip)
	}
	if npm.err != nil {
		t.Fatalf("installing the npm MCP servers: %v", npm.err)
	}
	return npm.dir, npm.node
}

// InstallMCP drops root/skill/version into a tree as an installer would: the
// files of src (hard-linked: the folder digest covers contents, and the host
// copies them before it runs them; dot files and a manifest left out) and a
// "runtime": "mcp" manifest running node with args and carrying the folder
// digest, after edit, staged beside the tree and renamed into place.
func InstallMCP(root, skill, version, src string, edit func(m map[string]any), args ...string) (string, error) {
	stage, err := os.MkdirTemp(root, "_stage-")
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(stage, rel), 0o755)
		}
		if rel == "manifest.json" || strings.HasPrefix(rel, ".") {
			return nil
		}
		return os.Link(p, filepath.Join(stage, rel))
	})
	if err != nil {
		return "", err
	}
	// The digest as an install script computes it (docs/manifest.md).
	cmd := exec.Command("sh", "-c", `find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1`)
	cmd.Dir = stage
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("folder digest: %w", err)
	}
	m := map[string]any{
		"manifest_version": 1, "name": skill, "version": version, "description": "The MCP server " + skill + ".",
		"runtime": "mcp", "command": "node", "args": args, "digest": "sha256:" + strings.TrimSpace(string(out)),
		"tags": []string{"mcp"},
	}
	if edit != nil {
		edit(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), b, 0o644); err != nil {
		return "", err
	}
	dir := filepath.Join(root, skill, version)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	return dir, os.Rename(stage, dir)
}

var nodeSkill struct {
	once sync.Once
	dir  string
	skip string
	err  error
}

// NodeSkill builds the JavaScript example skill
// (examples/polyglot/wordstats-node, by scripts/build-node-skill.sh into
// .cache/npm-polyglot, once per test binary) and returns its version folder: the bundled script
// "skill" and its manifest.json. Copy it into a tree; do not change it. It
// skips the test, saying why, when node or npm is missing; any other build
// failure fails it.
func NodeSkill(t testing.TB) string {
	t.Helper()
	nodeSkill.once.Do(func() {
		nodeSkill.dir, nodeSkill.skip, nodeSkill.err = runNodeScript("build-node-skill.sh")
	})
	if nodeSkill.skip != "" {
		t.Skip("the JavaScript example skill cannot be built: " + nodeSkill.skip)
	}
	if nodeSkill.err != nil {
		t.Fatalf("building the JavaScript example skill: %v", nodeSkill.err)
	}
	return nodeSkill.dir
}

// runNodeScript runs one of the project's npm scripts, which print a folder
// on their last line and exit 3 when node or npm is missing: it returns
// that folder, or why the caller should skip, or the script's error.
func runNodeScript(script string, args ...string) (dir, skip string, err error) {
	out, err := exec.Command("bash", append([]string{filepath.Join(ModuleRoot(), "scripts", script)}, args...)...).Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return "", strings.TrimSpace(string(ee.Stderr)), nil
	case errors.As(err, &ee):
		return "", "", fmt.Errorf("%s: %s", script, strings.TrimSpace(string(ee.Stderr)))
	case err != nil:
		return "", "", fmt.Errorf("%s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], "", nil
}

// InstallNodeSkill copies the built JavaScript example skill (NodeSkill:
// the bundled script and its manifest) into tree as wordstats/1.0.0 and
// returns that folder.
func InstallNodeSkill(t testing.TB, tree string) string {
	t.Helper()
	src := NodeSkill(t)
	dst := filepath.Join(tree, "wordstats", "1.0.0")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"skill": 0o755, "manifest.json": 0o644} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, name), b, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
