package testenv

import (
	"errors"
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
		out, err := exec.Command("bash", filepath.Join(ModuleRoot(), "scripts", "install-mcp-servers.sh")).Output()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 3:
			npm.skip = strings.TrimSpace(string(ee.Stderr))
			return
		case errors.As(err, &ee):
			npm.err = errors.New(strings.TrimSpace(string(ee.Stderr)))
			return
		case err != nil:
			npm.err = err
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		npm.dir = lines[len(lines)-1]
		npm.node, npm.err = exec.LookPath("node")
	})
	if npm.skip != "" {
		t.Skip("the npm MCP servers cannot be installed: " + npm.skip)
	}
	if npm.err != nil {
		t.Fatalf("installing the npm MCP servers: %v", npm.err)
	}
	return npm.dir, npm.node
}
