package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/skillhost/skillhost"

// mayImport is the direction of imports, package by package (paths relative
// to the module; "x/..." is x and everything under it): each package of ours
// may import only the packages of ours listed for it. docs/architecture.md
// draws the same table. Packages that do not exist yet (pkg/host, pkg/proc,
// the rooms to come) are listed so the rule is there when they land; a
// package of ours found in no row fails the test, so every new package is
// placed by a decision.
//
// The shape: cmd/host → host → faces and parts; faces (api, mcp, agent) →
// registry (and events for the SSE stream); loader → its inputs (manifest,
// skillmd, proc, runtimes) and the registry; registry → nothing of ours
// but its own subpackages; the sdk module → nothing of the host's.
// anyone lists the leaf helpers every package of ours may import: they
// import nothing of ours and hold one mechanism each (secret files and
// atomic writes; the server-sent event writer).
var anyone = []string{"internal/fileio", "internal/sse"}

var mayImport = map[string][]string{
	// The daemon's binary: flags → host.Config → host.Run. The CLI decodes
	// api's wire types, `host validate` reads manifests, and main enters the
	// reaper mode through proc before anything else. host.Config carries the
	// faces' own configs (agent, mcp, registry/embed) and the loader's file
	// names, and `host eval-prefilter` ranks a catalog with the registry
	// without a daemon. The assembly itself is pkg/host's alone.
	"cmd/host": {"pkg/host", "pkg/api", "pkg/manifest", "pkg/skillmd", "pkg/proc",
		"pkg/agent", "pkg/mcp", "pkg/loader", "pkg/registry/..."},
	"cmd/skillbench": {"internal/bench/..."},

	// The assembly: builds every part from one Config and owns start/stop;
	// a face that cannot open answers its routes in the one error shape.
	"pkg/host": {"pkg/api", "pkg/mcp", "pkg/agent", "pkg/flow", "pkg/team", "pkg/fleet", "pkg/runs",
		"pkg/loader", "pkg/mcprt", "pkg/proc", "pkg/manifest", "pkg/skillmd", "pkg/skills",
		"pkg/registry/...", "pkg/events", "pkg/metrics", "pkg/console", "internal/httpjson"},

	// Faces: each reaches the tools through the registry only.
	"pkg/api":   {"pkg/registry", "pkg/skills", "pkg/skillmd", "pkg/registry/openaitools", "pkg/events", "internal/httpjson"},
	"pkg/mcp":   {"pkg/registry", "internal/httpjson"},
	"pkg/agent": {"pkg/registry", "pkg/skills", "pkg/skillmd", "pkg/registry/openaitools", "internal/httpjson", "internal/sse"},
	"pkg/flow":  {"pkg/runs", "pkg/agent", "pkg/registry", "pkg/registry/openaitools", "internal/httpjson"},
	"pkg/team":  {"pkg/runs", "pkg/agent", "pkg/registry", "pkg/registry/openaitools", "internal/httpjson"},
	"pkg/runs":  {},

	// Lifecycle and what it consumes.
	"pkg/loader":   {"pkg/manifest", "pkg/skillmd", "pkg/skills", "pkg/proc", "pkg/mcprt", "pkg/registry", "pkg/events", "sdk", "sdk/proto", "sdk/proctree"},
	"pkg/mcprt":    {"pkg/registry", "pkg/manifest", "pkg/proc", "pkg/skillmd", "sdk/proctree"},
	"pkg/proc":     {"pkg/manifest", "sdk", "sdk/proctree"},
	"pkg/fleet":    {"pkg/loader", "pkg/manifest", "pkg/registry", "internal/httpjson"},
	"pkg/manifest": {},
	"pkg/skillmd":  {},
	// The served catalog of Agent Skills: judged by skillmd, ranked by the
	// prefilter's text index; faces read it, the loader publishes it.
	"pkg/skills": {"pkg/skillmd", "pkg/registry/textindex"},

	// The registry knows nothing of processes, files or faces.
	"pkg/registry":       {"pkg/registry/textindex"},
	"pkg/registry/embed": {"pkg/registry", "pkg/registry/textindex"},
	// OpenAI's tool payloads are rendered beside the registry, not in it,
	// so the registry carries no face library.
	"pkg/registry/openaitools": {"pkg/registry"},
	"pkg/registry/textindex":   {},

	// Observers and leaves.
	"pkg/metrics": {"pkg/loader", "pkg/manifest", "pkg/registry", "pkg/events"},
	"pkg/events":  {},
	"pkg/console": {},

	// Helpers shared by faces and by tests.
	"internal/httpjson":   {"pkg/registry"}, // used by faces and by pkg/fleet's HTTP handlers
	"internal/fileio":     {},
	"internal/sse":        {},
	"internal/filtertest": {"pkg/registry"},
	"internal/testenv":    {"sdk/proctree"},
	"internal/fleettest":  {},
	"internal/testskill":  {"sdk", "sdk/proto"},

	// The bench harness drives whatever it measures; the bench skills and
	// relays are skills.
	"internal/bench/...":  {"internal/bench/...", "internal/testenv", "pkg/...", "sdk/..."},
	"internal/benchmcp":   {"internal/bench/tools"},
	"internal/benchrpc":   {"internal/bench/rpcplugin", "sdk"},
	"internal/benchskill": {"internal/bench/tools", "sdk"},

	// Skills and the tests that drive binaries see only the SDK.
	"examples/...":                {"sdk"},
	"test/arch":                   {},
	"test/console":                {},
	"test/e2e":                    {},
	"test/reliability":            {},
	"test/reliability/skills/...": {"sdk", "sdk/proto", "test/reliability/skills/internal/kit"},

	// The sdk module: all a skill author imports, nothing of the host's.
	"sdk":           {"sdk/proto", "sdk/proctree"},
	"sdk/proto":     {},
	"sdk/proctree":  {},
	"sdk/skilltest": {"sdk", "sdk/proto"},
}

// knownViolations are edges the table forbids that today's code still has,
// each with the work that removes it. Delete an entry when its edge goes:
// the test fails on an entry whose edge no longer exists, so the list
// cannot outlive its reasons.
var knownViolations = map[[2]string]string{}

// faceLibraries belong to one face each; a core package must not reach
// them, not even through another package.
var faceLibraries = []string{
	"github.com/sashabaranov/go-openai",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/prometheus/client_golang",
}

// runtimeOwners may bring in a face library for another reason than a
// face: the mcp skill runtime (pkg/mcprt) is an MCP client of the servers it
// runs, so the go-sdk's JSON-RPC is its wire protocol. A core package may
// reach the library through its owner, and only through it.
var runtimeOwners = map[string]string{
	"github.com/modelcontextprotocol/go-sdk": "github.com/skillhost/skillhost/pkg/mcprt",
}

// core packages carry no face: no face library in their dependencies.
var core = []string{
	"pkg/registry", "pkg/registry/textindex", "pkg/manifest", "pkg/skillmd", "pkg/skills",
	"pkg/loader", "pkg/mcprt", "pkg/proc", "pkg/events", "pkg/runs",
}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
	Error      *struct{ Err string }
}

// graph lists every package of the module and the sdk module, with every
// dependency, as `go list -deps` sees them (no test files: the rules are
// about the code that ships).
func graph(t *testing.T) map[string]pkg {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports,Standard,Error", "./...", module+"/sdk/...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	all := map[string]pkg{}
	var errs []error
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
		}
		all[p.ImportPath] = p
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("go list found broken packages:\n%v", err)
	}
	return all
}

// ours returns the module-relative path of an import path of ours.
func ours(path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

// match reports whether rel is pattern, or under it for "x/...".
func match(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

// rule finds the row of mayImport for rel: its own, else the longest
// pattern that covers it.
func rule(rel string) ([]string, bool) {
	if allowed, ok := mayImport[rel]; ok {
		return allowed, true
	}
	best := ""
	for pattern := range mayImport {
		if strings.HasSuffix(pattern, "/...") && match(pattern, rel) && len(pattern) > len(best) {
			best = pattern
		}
	}
	if best == "" {
		return nil, false
	}
	return mayImport[best], true
}

func TestImportDirection(t *testing.T) {
	all := graph(t)
	used := map[[2]string]bool{}
	var found int
	for _, p := range all {
		from, ok := ours(p.ImportPath)
		if !ok {
			continue
		}
		found++
		allowed, ok := rule(from)
		if !ok {
			t.Errorf("%s is in no row of mayImport: decide what it may import, add the row here and to docs/architecture.md", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := ours(imp)
			if !ok {
				if _, known := knownViolations[[2]string{from, imp}]; known {
					used[[2]string{from, imp}] = true
				}
				continue
			}
			if slices.Contains(anyone, to) || slices.ContainsFunc(allowed, func(a string) bool { return match(a, to) }) {
				continue
			}
			if _, known := knownViolations[[2]string{from, to}]; known {
				used[[2]string{from, to}] = true
				continue
			}
			may := strings.Join(allowed, ", ")
			if may == "" {
				may = "nothing of ours"
			}
			t.Errorf("%s imports %s, against the direction in docs/architecture.md (it may import: %s)", from, to, may)
		}
	}
	if found < 20 {
		t.Fatalf("go list found %d packages of ours: the graph was not read", found)
	}
	for edge, why := range knownViolations {
		if !used[edge] {
			t.Errorf("known violation %s → %s (%s) is gone: delete it from knownViolations", edge[0], edge[1], why)
		}
	}
}

// TestCoreReachesNoFaceLibrary follows every core package's dependencies
// (not only its own imports) and fails on a face library among them. A known
// violation's edge is left out of the walk, so the one edge is reported once,
// by TestImportDirection, rather than by everything that imports it.
func TestCoreReachesNoFaceLibrary(t *testing.T) {
	all := graph(t)
	for _, c := range core {
		start := module + "/" + c
		if _, ok := all[start]; !ok {
			continue // a room not built yet
		}
		// Breadth-first, remembering how each package was reached, so the
		// first package of a library found is reached by a shortest path.
		via := map[string]string{start: ""}
		order := []string{start}
		for i := 0; i < len(order); i++ {
			cur := order[i]
			rel, _ := ours(cur)
			for _, imp := range all[cur].Imports {
				if _, seen := via[imp]; seen || all[imp].Standard {
					continue
				}
				if _, known := knownViolations[[2]string{rel, imp}]; known {
					continue
				}
				via[imp] = cur
				order = append(order, imp)
			}
		}
		for _, lib := range faceLibraries {
			i := slices.IndexFunc(order, func(dep string) bool { return dep == lib || strings.HasPrefix(dep, lib+"/") })
			if i < 0 {
				continue
			}
			path := []string{order[i]}
			for p := via[order[i]]; p != ""; p = via[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			if owner, ok := runtimeOwners[lib]; ok && slices.Contains(path, owner) {
				continue
			}
			t.Errorf("core package %s reaches the face library %s: %s", c, lib, strings.Join(path, " → "))
		}
	}
}
