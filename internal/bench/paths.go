package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/skillhost/skillhost/internal/bench/rpcplugin"
	"github.com/skillhost/skillhost/internal/bench/tools"
	"github.com/skillhost/skillhost/internal/fileio"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// A path is one way of reaching the benchmark tools.
type path struct {
	key   string // "a".."f"
	name  string
	call  callFunc
	close func()
	peer  int // the process serving the calls, whose tree's CPU counts as the path's; 0: none
}

// peerCPU is the CPU used so far by p's serving process and its
// descendants.
func (p *path) peerCPU() time.Duration {
	if p.peer <= 0 {
		return 0
	}
	h, c := treeCPU(p.peer)
	return h + c
}

// skillPID is the pid of the process serving skill in l (0 if none).
func skillPID(l *loader.Loader, skill string) int {
	for _, s := range l.Status() {
		if s.Name != skill {
			continue
		}
		for _, v := range s.Versions {
			if v.Version == s.Active {
				return v.PID
			}
		}
	}
	return 0
}

// Path keys, in the order the report shows them.
const (
	pathHTTP     = "a"
	pathHTTPUnix = "a2"
	pathHTTPOne  = "a3"
	pathRegistry = "b"
	pathPlugin   = "c"
	pathNetRPC   = "c2"
	pathMCP      = "d"
	pathFunc     = "e"
	pathBareHTTP = "f"
	pathRelay    = "g"
)

// pathNames are the report's names. a2, a3, c2, f and g are not in the
// issue: a2 is the daemon's other listener kind, a3 the daemon and its skill
// with one processor each (what docs/operations.md advises on a machine of
// one or two cores), c2 go-plugin's other protocol (the issue asks what
// net/rpc would change), f the floor of an HTTP tool server in another
// process (no skill behind it), so that the cost of the HTTP hop itself
// shows, and g the barest HTTP front on the same skill process (two hops,
// as (a) makes, with no skillhost code), so that what skillhost itself adds
// to two hops shows apart from what the second hop costs.
var pathNames = map[string]string{
	pathHTTP:     "(a) skillhost HTTP API",
	pathHTTPUnix: "(a2) HTTP API on a unix socket",
	pathHTTPOne:  "(a3) HTTP API, one processor each (GOMAXPROCS=1, --skill-gomaxprocs 1)",
	pathRegistry: "(b) skillhost Go invoke (registry)",
	pathPlugin:   "(c) bare go-plugin gRPC",
	pathNetRPC:   "(c2) bare go-plugin net/rpc",
	pathMCP:      "(d) MCP stdio (go-sdk)",
	pathFunc:     "(e) in-process function",
	pathBareHTTP: "(f) bare net/http server process, no skill",
	pathRelay:    "(g) bare net/http relay process → bare go-plugin skill, no skillhost code",
}

func argsFor(tool string) []byte {
	if tool == tools.BlobTool {
		return tools.BlobJSON
	}
	return tools.EchoJSON
}

// minResult is the smallest result a correct answer of tool can have.
func minResult(tool string) int {
	if tool == tools.BlobTool {
		return tools.BlobBytes
	}
	return len(`{"msg":"","n":0}`)
}

// benchLimits are the manifest limits of every benchmark skill: enough
// concurrency for 64 callers plus the HTTP and swap callers.
var benchLimits = map[string]any{"max_concurrency": 1024}

// httpPath calls skill's tools through a running daemon's invoke endpoint
// with a keep-alive client that keeps one idle connection per caller.
// A baseURL of "unix:PATH" dials the daemon's unix socket.
func httpPath(baseURL, skill string) *path {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if sock, ok := strings.CutPrefix(baseURL, "unix:"); ok {
		baseURL = "http://skillhost"
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) { return dialer.DialContext(ctx, "unix", sock) }
	}
	tr := &http.Transport{
		DialContext:         dial,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	bodies := map[string][]byte{}
	urls := map[string]string{}
	for _, t := range []string{tools.EchoTool, tools.BlobTool} {
		bodies[t] = append(append([]byte(`{"arguments":`), argsFor(t)...), '}')
		urls[t] = baseURL + "/v1/tools/" + skill + "." + t + "/invoke"
	}
	call := func(ctx context.Context, tool string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, urls[tool], bytes.NewReader(bodies[tool]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("invoke %s: %s: %s", tool, resp.Status, b)
		}
		if len(b) < minResult(tool) {
			return fmt.Errorf("invoke %s: short answer %q", tool, b)
		}
		return nil
	}
	return &path{key: pathHTTP, name: pathNames[pathHTTP], call: call, close: tr.CloseIdleConnections}
}

// registryPath runs the loader and registry in this process over a tree
// holding skill bench, as cmd/host does, and calls Registry.Invoke.
func registryPath(ctx context.Context, root, runDir string) (*path, *registry.Registry, *loader.Loader, error) {
	reg := registry.New(registry.Config{})
	l, err := loader.New(loader.Config{Skills: root, Registry: reg, RunDir: runDir})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := l.Start(ctx); err != nil {
		l.Close(context.Background())
		return nil, nil, nil, err
	}
	if _, ok := reg.Snapshot().Tool("bench.echo"); !ok {
		l.Close(context.Background())
		return nil, nil, nil, fmt.Errorf("registry path: bench.echo not registered: %+v", l.Status())
	}
	names := map[string]string{tools.EchoTool: "bench.echo", tools.BlobTool: "bench.blob"}
	call := func(ctx context.Context, tool string) error {
		res, err := reg.Invoke(ctx, names[tool], argsFor(tool))
		if err != nil {
			return err
		}
		if len(res.Result) < minResult(tool) {
			return fmt.Errorf("invoke %s: short result %q", tool, res.Result)
		}
		return nil
	}
	p := &path{key: pathRegistry, name: pathNames[pathRegistry], call: call, close: func() { l.Close(context.Background()) }}
	return p, reg, l, nil
}

// startPlugin starts bin with go-plugin as the loader starts a skill (the
// skillhost handshake, AutoMTLS, only env for environment) over protocol
// proto, and returns the dispensed stub and the client that owns the
// process.
func startPlugin(bin string, env []string, plugins plugin.PluginSet, proto plugin.Protocol, dial []grpc.DialOption) (any, *plugin.Client, error) {
	cmd := exec.Command(bin)
	cmd.Env = env
	c := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: sdk.Handshake, Plugins: plugins, Cmd: cmd,
		AllowedProtocols: []plugin.Protocol{proto}, AutoMTLS: true, SkipHostEnv: true,
		StartTimeout:    10 * time.Second,
		Logger:          hclog.NewNullLogger(),
		GRPCDialOptions: dial,
	})
	cp, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, nil, fmt.Errorf("go-plugin client: %w", err)
	}
	raw, err := cp.Dispense(sdk.PluginName)
	if err != nil {
		c.Kill()
		return nil, nil, fmt.Errorf("go-plugin dispense: %w", err)
	}
	return raw, c, nil
}

// pluginPath starts benchskill with go-plugin as the loader does (gRPC,
// AutoMTLS, only the manifest's environment, the skill protocol's codec,
// sdk.DialOptions' fixed windows) and calls the gRPC stub directly: no
// registry, no validation, no limits.
func pluginPath(skillBin string) (*path, error) {
	invoke, c, err := bareSkill(skillBin)
	if err != nil {
		return nil, err
	}
	call := func(ctx context.Context, tool string) error {
		res, err := invoke(ctx, tool, argsFor(tool))
		if err != nil {
			return err
		}
		if len(res) < minResult(tool) {
			return fmt.Errorf("invoke %s: short result %q", tool, res)
		}
		return nil
	}
	return &path{key: pathPlugin, name: pathNames[pathPlugin], call: call, close: c.Kill, peer: c.ReattachConfig().Pid}, nil
}

// toolFunc answers one call of a benchmark tool with its JSON result.
type toolFunc func(ctx context.Context, tool string, args []byte) ([]byte, error)

// bareSkill starts benchskill as the bare client (c) does and returns a
// function that calls one of its tools, and the client that owns the
// process.
func bareSkill(skillBin string) (toolFunc, *plugin.Client, error) {
	raw, c, err := startPlugin(skillBin, []string{"BENCHSKILL_NAME=bench", "BENCHSKILL_VERSION=1.0.0"}, sdk.PluginSet(nil), plugin.ProtocolGRPC,
		append(sdk.DialOptions(), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(sdk.Codec),
			grpc.MaxCallRecvMsgSize(sdk.MaxMessageBytes), grpc.MaxCallSendMsgSize(sdk.MaxMessageBytes))))
	if err != nil {
		return nil, nil, err
	}
	rpc := raw.(skillpb.SkillClient)
	invoke := func(ctx context.Context, tool string, args []byte) ([]byte, error) {
		resp, err := rpc.Invoke(ctx, &skillpb.InvokeRequest{Tool: tool, Arguments: args})
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, errors.New(resp.Error.Message)
		}
		return resp.Result, nil
	}
	return invoke, c, nil
}

// netRPCPath starts benchrpc, the same tools over go-plugin's net/rpc
// protocol (gob on yamux streams instead of protobuf on HTTP/2), with
// everything else as pluginPath has it, and calls its stub.
func netRPCPath(rpcBin string) (*path, error) {
	raw, c, err := startPlugin(rpcBin, nil, rpcplugin.PluginSet(), plugin.ProtocolNetRPC, nil)
	if err != nil {
		return nil, err
	}
	stub := raw.(*rpcplugin.Client)
	call := func(ctx context.Context, tool string) error {
		res, err := stub.Invoke(ctx, tool, argsFor(tool))
		if err != nil {
			return err
		}
		if len(res) < minResult(tool) {
			return fmt.Errorf("invoke %s: short result %q", tool, res)
		}
		return nil
	}
	return &path{key: pathNetRPC, name: pathNames[pathNetRPC], call: call, close: c.Kill, peer: c.ReattachConfig().Pid}, nil
}

// mcpPath starts benchmcp over stdio with the go-sdk's CommandTransport and
// calls it with the go-sdk client, after listing its tools once as a client
// would.
func mcpPath(ctx context.Context, mcpBin string) (*path, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "skillbench", Version: "1.0.0"}, nil)
	cmd := exec.Command(mcpBin)
	cmd.Dir = filepath.Dir(mcpBin)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp connect: %w", err)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil || len(lt.Tools) != 2 {
		cs.Close()
		return nil, fmt.Errorf("mcp list tools: %v (%d tools)", err, len(lt.Tools))
	}
	call := func(ctx context.Context, tool string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(argsFor(tool))})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("mcp %s: tool error %v", tool, res.Content)
		}
		if len(res.Content) == 0 {
			return fmt.Errorf("mcp %s: empty result", tool)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) < minResult(tool) {
			return fmt.Errorf("mcp %s: short result", tool)
		}
		return nil
	}
	return &path{key: pathMCP, name: pathNames[pathMCP], call: call, close: func() { cs.Close() }, peer: cmd.Process.Pid}, nil
}

// funcPath calls the same handler in this process, from JSON arguments to
// a JSON result.
func funcPath() *path {
	call := func(ctx context.Context, tool string) error {
		res, err := tools.Call(ctx, tool, argsFor(tool))
		if err != nil {
			return err
		}
		if len(res) < minResult(tool) {
			return fmt.Errorf("call %s: short result", tool)
		}
		return nil
	}
	return &path{key: pathFunc, name: pathNames[pathFunc], call: call, close: func() {}}
}

// bareServerPath starts a minimal HTTP tool server in its own process
// (self, re-executed with args: ServeBareHTTP for (f), ServeBareRelay for
// (g)) and calls it over loopback TCP like (a). The server's address
// comes back in work/addr; the path's close stops it with SIGTERM, so that
// a relay stops its skill too.
func bareServerPath(key, self, work string, args ...string) (*path, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(work, "addr")
	cmd := exec.Command(self, append(args, addrFile)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(addrFile)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			p := httpPath("http://"+strings.TrimSpace(string(b)), "bench")
			p.key, p.name, p.peer = key, pathNames[key], cmd.Process.Pid
			inner := p.close
			p.close = func() { inner(); stop() }
			return p, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s: the server process exited before it listened", pathNames[key])
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("%s: the server did not start in 10 s", pathNames[key])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ServeBareHTTP is the process behind path (f): a minimal net/http tool
// server (decode the envelope, call the handler, write the result) on
// 127.0.0.1:0, whose address it writes to addrFile. It returns when its
// parent goes away or on SIGTERM.
func ServeBareHTTP(addrFile string) error {
	return serveBare(addrFile, tools.Call)
}

// ServeBareRelay is the process behind path (g): the server of
// ServeBareHTTP, but every call goes to benchskill (skillBin) over the bare
// go-plugin client of path (c). Two process hops, as through the daemon,
// with nothing of skillhost's between them: no registry, no validation, no
// limits, no lease, no browser guard, no error mapping.
func ServeBareRelay(addrFile, skillBin string) error {
	invoke, c, err := bareSkill(skillBin)
	if err != nil {
		return err
	}
	defer c.Kill()
	return serveBare(addrFile, invoke)
}

func serveBare(addrFile string, call toolFunc) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tools/{name}/invoke", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, tool, _ := strings.Cut(r.PathValue("name"), ".")
		res, err := call(r.Context(), tool, req.Arguments)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		buf := make([]byte, 0, len(res)+16)
		buf = append(append(append(buf, `{"result":`...), res...), "}\n"...)
		w.Write(buf)
	})
	srv := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ppid := os.Getppid()
	go func() {
		defer srv.Close()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for os.Getppid() == ppid {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	if err := fileio.WriteAtomic(addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
