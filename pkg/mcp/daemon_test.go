package mcp_test

// These tests drive a real `host serve` (and `host mcp`) process with the
// go-sdk's own client, over streamable HTTP and stdio, with real skill
// processes installed the way an operator installs them.

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/mcp"
)

func install(t *testing.T, root, skill, version string) {
	t.Helper()
	if _, err := testenv.Install(root, testenv.Version{Skill: skill, Version: version, Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
}

func startDaemon(t *testing.T, root string, extra ...string) *testenv.Daemon {
	t.Helper()
	args := append([]string{"--skills", root, "--grace", "2s", "--debounce", "100ms", "--state-dir", t.TempDir()}, extra...)
	return testenv.StartDaemon(t, hostBin, nil, args...)
}

// client is a go-sdk client session that counts list_changed notifications.
type client struct {
	t       *testing.T
	cs      *mcpsdk.ClientSession
	changed chan struct{}
}

func newClient(t *testing.T) (*mcpsdk.Client, *client) {
	c := &client{t: t, changed: make(chan struct{}, 64)}
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "skillhost-test", Version: "0"}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	return cl, c
}

type headerRT struct {
	h    http.Header
	next http.RoundTripper
}

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range rt.h {
		r.Header[k] = v
	}
	return rt.next.RoundTrip(r)
}

// connectHTTP opens a session on endpoint. headers are sent with every
// request (a bearer token).
func connectHTTP(t *testing.T, endpoint string, headers http.Header) *client {
	t.Helper()
	c, err := tryConnectHTTP(t, endpoint, headers)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	return c
}

func tryConnectHTTP(t *testing.T, endpoint string, headers http.Header) (*client, error) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: headerRT{h: headers, next: tr}}
	cl, c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, err
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c, nil
}

// connectCommand launches cmd as a stdio MCP server.
func connectCommand(t *testing.T, cmd *exec.Cmd) *client {
	t.Helper()
	cl, c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := cl.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v", cmd.Args, err)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c
}

func (c *client) tools() []*mcpsdk.Tool {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*mcpsdk.Tool
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			c.t.Fatalf("tools/list: %v", err)
		}
		out = append(out, tool)
	}
	return out
}

func (c *client) tool(name string) *mcpsdk.Tool {
	for _, t := range c.tools() {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (c *client) call(name string, args any) (*mcpsdk.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
}

func (c *client) mustCall(name string, args any) *mcpsdk.CallToolResult {
	c.t.Helper()
	res, err := c.call(name, args)
	if err != nil {
		c.t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

func (c *client) drainChanged() {
	for {
		select {
		case <-c.changed:
		default:
			return
		}
	}
}

type echoOut struct {
	Version string `json:"version"`
	Msg     string `json:"msg"`
	PID     int    `json:"pid"`
}

func echoOf(t *testing.T, res *mcpsdk.CallToolResult) echoOut {
	t.Helper()
	if res.IsError {
		t.Fatalf("call failed: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var out echoOut
	if err := json.Unmarshal(b, &out); err != nil || out.Version == "" {
		t.Fatalf("structuredContent %s is not an echo result (%v)", b, err)
	}
	// The text rendering carries the same JSON.
	var fromText echoOut
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil || fromText != out {
		t.Fatalf("text %q does not match structuredContent %s", text(res), b)
	}
	return out
}

func text(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func names(tools []*mcpsdk.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func metaVersion(t *mcpsdk.Tool) string {
	if t == nil {
		return ""
	}
	v, _ := t.Meta[mcp.MetaVersion].(string)
	return v
}

// waitVersion waits for a list_changed after which the list shows skill's
// echo at version, and returns how many notifications that took.
func (c *client) waitVersion(tool, version string, timeout time.Duration) int {
	c.t.Helper()
	deadline := time.After(timeout)
	n := 0
	for {
		select {
		case <-c.changed:
			n++
			if metaVersion(c.tool(tool)) == version {
				return n
			}
		case <-deadline:
			c.t.Fatalf("no list_changed showing %s at %s within %v (after %d notifications); list: %v", tool, version, timeout, n, names(c.tools()))
		}
	}
}

var testskillTools = []string{"alpha.big", "alpha.crash", "alpha.echo", "alpha.env", "alpha.fail", "alpha.sleep", "alpha.spawn"}

func TestDaemonInitializeListCall(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	d := startDaemon(t, root)
	c := connectHTTP(t, d.URL+"/mcp", nil)

	init := c.cs.InitializeResult()
	if init.ServerInfo == nil || init.ServerInfo.Name != "skillhost" {
		t.Errorf("serverInfo = %+v", init.ServerInfo)
	}
	if init.Capabilities.Tools == nil || !init.Capabilities.Tools.ListChanged {
		t.Errorf("capabilities.tools = %+v, want listChanged", init.Capabilities.Tools)
	}
	if init.Instructions == "" {
		t.Error("no instructions")
	}

	tools := c.tools()
	if got := strings.Join(names(tools), ","); got != strings.Join(testskillTools, ",") {
		t.Fatalf("tools/list = %s, want %v in order", got, testskillTools)
	}
	byName := map[string]*mcpsdk.Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	echo := byName["alpha.echo"]
	if !strings.HasPrefix(echo.Description, "Echo a message") {
		t.Errorf("description = %q", echo.Description)
	}
	in, _ := echo.InputSchema.(map[string]any)
	if in["type"] != "object" || in["properties"].(map[string]any)["msg"] == nil {
		t.Errorf("input schema = %v", echo.InputSchema)
	}
	out, _ := echo.OutputSchema.(map[string]any)
	if out["type"] != "object" || out["properties"].(map[string]any)["pid"] == nil {
		t.Errorf("output schema = %v", echo.OutputSchema)
	}
	if a := echo.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("echo annotations = %+v, want read-only, idempotent, not destructive, closed world", echo.Annotations)
	}
	if a := byName["alpha.sleep"].Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint != nil || a.OpenWorldHint != nil {
		t.Errorf("sleep (no annotations) = %+v, want MCP's defaults left alone", a)
	}
	if metaVersion(echo) != "1.0.0" || echo.Meta[mcp.MetaSkill] != "alpha" || echo.Meta[mcp.MetaLLMName] != "alpha__echo" {
		t.Errorf("echo _meta = %v", echo.Meta)
	}
	// big returns a string: its output schema is wrapped as an object.
	big, _ := byName["alpha.big"].OutputSchema.(map[string]any)
	if big["type"] != "object" || big["properties"].(map[string]any)["result"].(map[string]any)["type"] != "string" {
		t.Errorf("big's output schema = %v, want the string schema wrapped under result", big)
	}

	// A call that works: structured result plus its text.
	res := c.mustCall("alpha.echo", map[string]any{"msg": "hello"})
	e := echoOf(t, res)
	if e.Msg != "hello" || e.Version != "1.0.0" || e.PID == 0 {
		t.Errorf("echo = %+v", e)
	}
	if res.Meta[mcp.MetaVersion] != "1.0.0" {
		t.Errorf("result _meta = %v", res.Meta)
	}
	// The OpenAI spelling of the name reaches the same tool.
	if e2 := echoOf(t, c.mustCall("alpha__echo", map[string]any{"msg": "x"})); e2.Msg != "x" {
		t.Errorf("alpha__echo = %+v", e2)
	}
	// A string result: text is the string, structuredContent wraps it.
	res = c.mustCall("alpha.big", map[string]any{"bytes": 3})
	if res.IsError || text(res) != "xxx" {
		t.Errorf("big: isError %v, text %q", res.IsError, text(res))
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["result"] != "xxx" {
		t.Errorf("big structuredContent = %v", res.StructuredContent)
	}

	// Invalid arguments: a tool result with isError and the reason.
	res = c.mustCall("alpha.echo", map[string]any{"msg": 5})
	if !res.IsError || !strings.Contains(text(res), "invalid_arguments") || !strings.Contains(text(res), "/msg") {
		t.Errorf("bad arguments: isError %v, text %q", res.IsError, text(res))
	}
	if e, _ := res.Meta[mcp.MetaError].(map[string]any); e["code"] != "invalid_arguments" {
		t.Errorf("error _meta = %v", res.Meta)
	}
	res = c.mustCall("alpha.sleep", map[string]any{"ms": -1})
	if !res.IsError || !strings.Contains(text(res), "/ms") {
		t.Errorf("sleep -1: isError %v, text %q", res.IsError, text(res))
	}
	// The tool itself refuses.
	res = c.mustCall("alpha.fail", nil)
	if !res.IsError || !strings.Contains(text(res), "the tool refuses") {
		t.Errorf("fail: isError %v, text %q", res.IsError, text(res))
	}
	// An unknown tool is a protocol error that says why.
	if _, err := c.call("alpha.nope", nil); err == nil || !strings.Contains(err.Error(), "no such tool") {
		t.Errorf("unknown tool: err = %v", err)
	}
	if _, err := c.call("ghost.echo", nil); err == nil || !strings.Contains(err.Error(), "no skill named ghost") {
		t.Errorf("unknown skill: err = %v", err)
	}
}

func TestDaemonListChangedOnVersionSwap(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	d := startDaemon(t, root)
	c := connectHTTP(t, d.URL+"/mcp", nil)
	if v := metaVersion(c.tool("alpha.echo")); v != "1.0.0" {
		t.Fatalf("echo at %q before the swap", v)
	}
	if e := echoOf(t, c.mustCall("alpha.echo", nil)); e.Version != "1.0.0" {
		t.Fatalf("served by %s", e.Version)
	}
	c.drainChanged()

	install(t, root, "alpha", "1.1.0")
	n := c.waitVersion("alpha.echo", "1.1.0", 20*time.Second)
	if e := echoOf(t, c.mustCall("alpha.echo", nil)); e.Version != "1.1.0" {
		t.Fatalf("after list_changed the call was served by %s", e.Version)
	}
	// One swap of seven tools is announced once, not once per tool (the
	// go-sdk may split one resync in two on a loaded machine).
	time.Sleep(500 * time.Millisecond)
	extra := len(c.changed)
	if n+extra > 3 {
		t.Errorf("%d list_changed notifications for one swap", n+extra)
	}

	// A new skill appears, a removed one disappears.
	c.drainChanged()
	install(t, root, "beta", "1.0.0")
	waitTools(t, c, func(ns []string) bool { return slices.Contains(ns, "beta.echo") })
	if err := os.RemoveAll(filepath.Join(root, "beta")); err != nil {
		t.Fatal(err)
	}
	waitTools(t, c, func(ns []string) bool { return !slices.Contains(ns, "beta.echo") })
}

// waitTools waits for list_changed notifications until the list passes ok.
func waitTools(t *testing.T, c *client, ok func([]string) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-c.changed:
			if ok(names(c.tools())) {
				return
			}
		case <-deadline:
			t.Fatalf("list never got there: %v", names(c.tools()))
		}
	}
}

// TestDaemonListChangedOnOperatorDecisions: disable, enable, pin and unpin
// over the daemon's API each reach a connected MCP client as list_changed,
// and the next tools/list is current.
func TestDaemonListChangedOnOperatorDecisions(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	install(t, root, "alpha", "1.1.0")
	install(t, root, "beta", "1.0.0")
	d := startDaemon(t, root)
	c := connectHTTP(t, d.URL+"/mcp", nil)
	if v := metaVersion(c.tool("alpha.echo")); v != "1.1.0" {
		t.Fatalf("alpha.echo at %q, want the newest", v)
	}
	admin := func(method, path string, body any) {
		t.Helper()
		if code, b := d.Do(t, method, path, body); code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, code, b)
		}
	}
	c.drainChanged()
	admin("POST", "/v1/skills/alpha/disable", nil)
	waitTools(t, c, func(ns []string) bool { return !slices.Contains(ns, "alpha.echo") && slices.Contains(ns, "beta.echo") })
	admin("POST", "/v1/skills/alpha/enable", nil)
	c.waitVersion("alpha.echo", "1.1.0", 20*time.Second)
	admin("PUT", "/v1/skills/alpha/pin", map[string]string{"version": "1.0.0"})
	c.waitVersion("alpha.echo", "1.0.0", 20*time.Second)
	if e := echoOf(t, c.mustCall("alpha.echo", nil)); e.Version != "1.0.0" {
		t.Fatalf("pinned, served by %s", e.Version)
	}
	admin("DELETE", "/v1/skills/alpha/pin", nil)
	c.waitVersion("alpha.echo", "1.1.0", 20*time.Second)
}

func TestDaemonListAfterCrashAndRestart(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	d := startDaemon(t, root)
	c := connectHTTP(t, d.URL+"/mcp", nil)
	before := echoOf(t, c.mustCall("alpha.echo", nil))
	c.drainChanged()
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The tools come back, served by a new process, and the list has them.
	var after echoOut
	ok := testenv.WaitFor(30*time.Second, func() bool {
		if !slices.Contains(names(c.tools()), "alpha.echo") {
			return false
		}
		res, err := c.call("alpha.echo", nil)
		if err != nil || res.IsError {
			return false
		}
		after = echoOf(t, res)
		return after.PID != before.PID
	})
	if !ok {
		t.Fatalf("alpha never came back after its crash; list %v\n%s", names(c.tools()), d.Logs())
	}
	if got := strings.Join(names(c.tools()), ","); got != strings.Join(testskillTools, ",") {
		t.Errorf("after restart tools/list = %s", got)
	}
	t.Logf("crash and restart: %d list_changed notifications; pid %d → %d", len(c.changed), before.PID, after.PID)
}

func TestDaemonFilterAndAuth(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	install(t, root, "beta", "1.0.0")
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "0123456789abcdef-mcp-test"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, root, "--token-file", tokenFile)
	d.Token = token

	if _, err := tryConnectHTTP(t, d.URL+"/mcp", nil); err == nil {
		t.Fatal("connected without the bearer token")
	}
	auth := http.Header{"Authorization": {"Bearer " + token}}
	c := connectHTTP(t, d.URL+"/mcp?skills=beta&read_only=true", auth)
	if got := strings.Join(names(c.tools()), ","); got != "beta.big,beta.echo,beta.env" {
		t.Errorf("filtered list = %s", got)
	}
	if _, err := c.call("alpha.echo", nil); err == nil || !strings.Contains(err.Error(), "not offered on this endpoint") {
		t.Errorf("call outside the filter: %v", err)
	}
	if e := echoOf(t, c.mustCall("beta.echo", nil)); e.Version != "1.0.0" {
		t.Errorf("beta.echo = %+v", e)
	}
	// The test skill's manifest tags every tool "test" (the in-process
	// tests cover tag filters in detail).
	if got := names(connectHTTP(t, d.URL+"/mcp?tags=test", auth).tools()); len(got) != 2*len(testskillTools) {
		t.Errorf("tags=test list = %v", got)
	}
	if got := names(connectHTTP(t, d.URL+"/mcp?tags=nothing-has-this", auth).tools()); len(got) != 0 {
		t.Errorf("tags=nothing-has-this list = %v", got)
	}
	// A bad filter is refused before any session exists.
	req, _ := http.NewRequest("POST", d.URL+"/mcp?skills=-x", strings.NewReader(`{}`))
	req.Header = auth.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad filter: status %d", resp.StatusCode)
	}
}

// childStderr collects a child's stderr in buf, and shows it as it comes
// with -v.
func childStderr(buf *testenv.SyncBuffer) io.Writer {
	if testing.Verbose() {
		return io.MultiWriter(buf, os.Stderr)
	}
	return buf
}

func TestStdioEmbedded(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	var stderr testenv.SyncBuffer
	cmd := exec.Command(hostBin, "mcp", "--skills", root, "--grace", "2s", "--debounce", "100ms", "--log-level", "debug")
	cmd.Stderr = childStderr(&stderr)
	c := connectCommand(t, cmd)

	if got := strings.Join(names(c.tools()), ","); got != strings.Join(testskillTools, ",") {
		t.Fatalf("tools/list = %s\n%s", got, stderr.String())
	}
	if e := echoOf(t, c.mustCall("alpha.echo", map[string]any{"msg": "stdio"})); e.Msg != "stdio" || e.Version != "1.0.0" {
		t.Errorf("echo = %+v", e)
	}
	res := c.mustCall("alpha.echo", map[string]any{"msg": []int{1}})
	if !res.IsError || !strings.Contains(text(res), "invalid_arguments") {
		t.Errorf("bad arguments: %v %q", res.IsError, text(res))
	}
	c.drainChanged()
	install(t, root, "alpha", "2.0.0")
	c.waitVersion("alpha.echo", "2.0.0", 20*time.Second)
	if e := echoOf(t, c.mustCall("alpha.echo", nil)); e.Version != "2.0.0" {
		t.Errorf("after the swap: %+v", e)
	}
	if !strings.Contains(stderr.String(), "serving MCP on stdio") {
		t.Errorf("the host logged nothing to stderr:\n%s", stderr.String())
	}

	// Closing the session stops the host and its skills.
	c.cs.Close()
	if !testenv.WaitFor(10*time.Second, func() bool { return len(testenv.Descendants(os.Getpid())) == 0 }) {
		t.Errorf("processes left after the client closed stdin: %v\n%s", testenv.Descendants(os.Getpid()), stderr.String())
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func TestStdioBridgeFollowsDaemonRestart(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	listen := "127.0.0.1:" + freePort(t)
	d := startDaemon(t, root, "--listen", listen, "--grace", "10s")
	var stderr testenv.SyncBuffer
	cmd := exec.Command(hostBin, "mcp", "--addr", d.URL, "--log-level", "debug")
	cmd.Stderr = childStderr(&stderr)
	c := connectCommand(t, cmd)

	if got := strings.Join(names(c.tools()), ","); got != strings.Join(testskillTools, ",") {
		t.Fatalf("tools/list through the bridge = %s\n%s", got, stderr.String())
	}
	if e := echoOf(t, c.mustCall("alpha.echo", map[string]any{"msg": "via"})); e.Msg != "via" {
		t.Errorf("echo = %+v", e)
	}
	res := c.mustCall("alpha.echo", map[string]any{"msg": 1})
	if !res.IsError || !strings.Contains(text(res), "invalid_arguments") {
		t.Errorf("bad arguments through the bridge: %v %q", res.IsError, text(res))
	}
	if _, err := c.call("alpha.nope", nil); err == nil || !strings.Contains(err.Error(), "no such tool") {
		t.Errorf("unknown tool through the bridge: %v", err)
	}

	// list_changed passes through.
	c.drainChanged()
	install(t, root, "alpha", "1.1.0")
	c.waitVersion("alpha.echo", "1.1.0", 20*time.Second)

	// The daemon stops: a client that only listens must not hold its
	// shutdown for the 10 s grace.
	start := time.Now()
	if err := d.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("daemon shutdown took %v with an MCP client connected", took)
	}
	res = c.mustCall("alpha.echo", nil)
	if !res.IsError || !strings.Contains(text(res), "unreachable") {
		t.Errorf("call while the daemon is down: %v %q", res.IsError, text(res))
	}
	if len(c.tools()) != len(testskillTools) {
		t.Errorf("the bridge dropped its list while the daemon was down")
	}

	// It comes back, with a newer version: the bridge reconnects, tells the
	// client, and serves the new version.
	c.drainChanged()
	install(t, root, "alpha", "1.2.0")
	startDaemon(t, root, "--listen", listen)
	c.waitVersion("alpha.echo", "1.2.0", 30*time.Second)
	if e := echoOf(t, c.mustCall("alpha.echo", nil)); e.Version != "1.2.0" {
		t.Errorf("after the daemon restart: %+v", e)
	}
}

// A hangup (the session's terminal or client gone) stops the embedded host
// cleanly, skills and all, instead of killing it outright.
func TestStdioEmbeddedStopsOnHangup(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	var stderr testenv.SyncBuffer
	cmd := exec.Command(hostBin, "mcp", "--skills", root, "--grace", "2s")
	cmd.Stderr = childStderr(&stderr)
	stdin, err := cmd.StdinPipe() // held open: the client does not go away
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if !testenv.WaitFor(20*time.Second, func() bool { return strings.Contains(stderr.String(), "serving MCP on stdio") }) {
		cmd.Process.Kill()
		<-exited
		t.Fatalf("never served\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit on SIGHUP: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("still running 15 s after SIGHUP\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "signal; stopping") {
		t.Errorf("no stop line in the log:\n%s", stderr.String())
	}
	if kids := testenv.Descendants(os.Getpid()); len(kids) > 0 {
		t.Errorf("processes left after SIGHUP: %v", kids)
	}
}

// TestStdioDiscovery: `host mcp --discovery search` over stdio, at the
// go-sdk's default protocol (2026-07-28): the session starts with the
// discovery tools and what it loads joins its list with list_changed.
func TestStdioDiscovery(t *testing.T) {
	root := t.TempDir()
	install(t, root, "alpha", "1.0.0")
	var stderr testenv.SyncBuffer
	cmd := exec.Command(hostBin, "mcp", "--skills", root, "--discovery", "search", "--read-only", "--log-level", "debug")
	cmd.Stderr = childStderr(&stderr)
	c := connectCommand(t, cmd)
	if v := c.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %s over stdio", v)
	}
	if got := strings.Join(names(c.tools()), ","); got != "call_tool,find_tools,load_tools" {
		t.Fatalf("a discovery session starts with %s\n%s", got, stderr.String())
	}
	found := text(c.mustCall("find_tools", map[string]any{"query": "echo", "limit": 20}))
	if !strings.Contains(found, `"alpha.echo"`) {
		t.Fatalf("find_tools: %s", found)
	}
	res := c.mustCall("load_tools", map[string]any{"names": []string{"alpha.echo"}})
	if res.IsError {
		t.Fatalf("load_tools: %s", text(res))
	}
	select {
	case <-c.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed after load_tools")
	}
	if got := names(c.tools()); !slices.Contains(got, "alpha.echo") || len(got) != 4 {
		t.Errorf("after loading: %v", got)
	}
	if e := echoOf(t, c.mustCall("alpha.echo", map[string]any{"msg": "found"})); e.Msg != "found" {
		t.Errorf("echo = %+v", e)
	}
	// --read-only bounds the mode: a write tool is neither loaded nor
	// called (alpha.crash would end the skill).
	if res := c.mustCall("load_tools", map[string]any{"names": []string{"alpha.crash"}}); !res.IsError {
		t.Errorf("a read-only endpoint loaded alpha.crash: %s", text(res))
	}
	if res := c.mustCall("call_tool", map[string]any{"name": "alpha.crash"}); !res.IsError || !strings.Contains(text(res), "unknown_tool") {
		t.Errorf("a read-only endpoint called alpha.crash: %s", text(res))
	}
	if e := echoOf(t, c.mustCall("call_tool", map[string]any{"name": "alpha.echo", "arguments": map[string]any{"msg": "still"}})); e.Msg != "still" {
		t.Errorf("call_tool after the refusals: %+v", e)
	}
}
