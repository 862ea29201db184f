package mcp

// In-process tests: a registry with in-memory backends, the Server over the
// go-sdk's in-memory transport or an httptest server, and the mapping
// functions on their own.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

type memBackend struct {
	version string
	started chan struct{} // if set, told when a call starts
	gate    chan struct{} // if set, calls wait for it
}

func (b *memBackend) Acquire() bool { return true }
func (b *memBackend) Release()      {}
func (b *memBackend) Invoke(ctx context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	if b.started != nil {
		b.started <- struct{}{}
	}
	if b.gate != nil {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch tool {
	case "text":
		return []byte(`"plain text"`), nil
	case "fail":
		return nil, registry.Errorf(registry.CodeToolError, "the tool refuses").With("why", "testing")
	}
	return json.Marshal(map[string]any{"version": b.version, "tool": tool, "args": json.RawMessage(args)})
}

const objSchema = `{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"additionalProperties":false}`

func spec(name, version string, b registry.Backend, tags []string, tools ...string) registry.SkillSpec {
	s := registry.SkillSpec{Name: name, Version: version, Description: name + " skill", Backend: b, Tags: tags}
	for _, t := range tools {
		ts := registry.ToolSpec{Name: t, Description: "does " + t, InputSchema: json.RawMessage(objSchema)}
		switch t {
		case "text":
			ts.OutputSchema = json.RawMessage(`{"type":"string"}`)
		case "add":
			ts.Annotations = registry.Annotations{ReadOnly: true, Idempotent: true}
			ts.OutputSchema = json.RawMessage(`{"type":"object","properties":{"version":{"type":"string"}}}`)
		}
		s.Tools = append(s.Tools, ts)
	}
	return s
}

func put(t *testing.T, reg *registry.Registry, s registry.SkillSpec) {
	t.Helper()
	if _, err := reg.Put(s); err != nil {
		t.Fatal(err)
	}
}

func newServer(t *testing.T, reg *registry.Registry, mod func(*Config)) *Server {
	t.Helper()
	cfg := Config{Registry: reg, Debounce: 50 * time.Millisecond, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn})}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type memClient struct {
	t       *testing.T
	cs      *mcpsdk.ClientSession
	changed chan struct{}
}

func sdkClient(changed chan struct{}) *mcpsdk.Client {
	return mcpsdk.NewClient(&mcpsdk.Implementation{Name: "unit", Version: "0"}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
}

// serveMem connects a client to s over the in-memory transport.
func serveMem(t *testing.T, s *Server, f Filter) *memClient {
	t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTransport(ctx, st, f) }()
	c := &memClient{t: t, changed: make(chan struct{}, 64)}
	cs, err := sdkClient(c.changed).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.cs = cs
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return c
}

func (c *memClient) list() []*mcpsdk.Tool {
	c.t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.Tools
}

func (c *memClient) names() string {
	var n []string
	for _, t := range c.list() {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

func (c *memClient) call(name string, args any) (*mcpsdk.CallToolResult, error) {
	return c.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
}

// settled lets fake time run for d inside a synctest bubble, then waits
// until every goroutine of the bubble (the server's watcher, the sessions,
// the transports) is blocked, and returns how many list_changed arrived.
// Nothing can still be on its way when it counts: no sleep and hope.
func (c *memClient) settled(d time.Duration) int {
	time.Sleep(d)
	synctest.Wait()
	n := 0
	for {
		select {
		case <-c.changed:
			n++
		default:
			return n
		}
	}
}

func (c *memClient) waitChanged(d time.Duration) bool {
	select {
	case <-c.changed:
		return true
	case <-time.After(d):
		return false
	}
}

func resultText(r *mcpsdk.CallToolResult) string {
	var out []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

func TestMirrorFollowsRegistry(t *testing.T) {
	reg := registry.New(registry.Config{})
	b1 := &memBackend{version: "1.0.0"}
	put(t, reg, spec("calc", "1.0.0", b1, []string{"math"}, "add", "sub"))
	s := newServer(t, reg, nil)
	c := serveMem(t, s, Filter{})
	if got := c.names(); got != "calc.add,calc.sub" {
		t.Fatalf("list = %s", got)
	}

	// A new version that drops sub and adds mul: one notification, and
	// the next list is current.
	put(t, reg, spec("calc", "2.0.0", &memBackend{version: "2.0.0"}, []string{"math"}, "add", "mul"))
	if !c.waitChanged(2 * time.Second) {
		t.Fatal("no list_changed after the swap")
	}
	tools := c.list()
	if len(tools) != 2 || tools[0].Name != "calc.add" || tools[1].Name != "calc.mul" || tools[0].Meta[MetaVersion] != "2.0.0" {
		t.Fatalf("after the swap: %v", tools)
	}

	// A crash hides the skill's tools; a call that still names one gets a
	// retryable tool result, not "unknown tool".
	b2 := &memBackend{version: "2.1.0"}
	put(t, reg, spec("calc", "2.1.0", b2, []string{"math"}, "add", "mul"))
	c.waitChanged(2 * time.Second)
	reg.SetAvailable("calc", b2, false, "crashed")
	if !c.waitChanged(2 * time.Second) {
		t.Fatal("no list_changed after the crash")
	}
	if got := c.names(); got != "" {
		t.Fatalf("list during the restart = %q, want none", got)
	}
	res, err := c.call("calc.add", map[string]any{"n": 1})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "skill_unavailable") {
		t.Fatalf("call during the restart: %v %v", res, err)
	}
	if e, _ := res.Meta[MetaError].(map[string]any); e["retryable"] != true {
		t.Errorf("error _meta = %v", res.Meta)
	}
	reg.SetAvailable("calc", b2, true, "")
	if !c.waitChanged(2*time.Second) || c.names() != "calc.add,calc.mul" {
		t.Fatalf("after the restart: %s", c.names())
	}

	// Disabled: gone, and a call says why.
	reg.Remove("calc", "disabled by an operator")
	if !c.waitChanged(2*time.Second) || c.names() != "" {
		t.Fatalf("after remove: %q", c.names())
	}
	if _, err := c.call("calc.add", nil); err == nil || !strings.Contains(err.Error(), "disabled by an operator") {
		t.Errorf("call after remove: %v", err)
	}
}

func TestBurstOfChangesIsOneNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Config{})
		s := newServer(t, reg, func(c *Config) { c.Debounce = 300 * time.Millisecond })
		c := serveMem(t, s, Filter{})
		if n := c.settled(time.Second); n != 0 {
			t.Fatalf("%d notifications before any change", n)
		}
		// Five publications 50 ms apart: far enough apart that the go-sdk
		// (which merges what lands within 10 ms) would announce each one,
		// and all within the server's debounce.
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			put(t, reg, spec(name, "1.0.0", &memBackend{version: "1.0.0"}, nil, "x", "y"))
			time.Sleep(50 * time.Millisecond)
		}
		// One resync for the burst, and one notification for it: the
		// resync's AddTool calls all land at the same instant of the
		// bubble's clock, which the go-sdk merges.
		if n := c.settled(time.Second); n != 1 {
			t.Errorf("%d notifications for one burst of 5 publications, want 1", n)
		}
		if got := c.names(); got != "a.x,a.y,b.x,b.y,c.x,c.y,d.x,d.y,e.x,e.y" {
			t.Errorf("list = %s", got)
		}
		// A publication that changes nothing visible costs nothing.
		reg.Remove("ghost", "never existed")
		if n := c.settled(time.Second); n != 0 {
			t.Errorf("%d notifications for an invisible change", n)
		}
	})
}

func TestListInsideDebounceIsCurrent(t *testing.T) {
	reg := registry.New(registry.Config{})
	s := newServer(t, reg, func(c *Config) { c.Debounce = time.Hour })
	c := serveMem(t, s, Filter{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, nil, "add"))
	// The watcher waits an hour; the list syncs on its own.
	if got := c.names(); got != "calc.add" {
		t.Fatalf("list = %q", got)
	}
	put(t, reg, spec("text", "1.0.0", &memBackend{version: "1.0.0"}, nil, "text"))
	res, err := c.call("text.text", nil)
	if err != nil || res.IsError || resultText(res) != "plain text" {
		t.Fatalf("call of a tool published a moment ago: %v %v", res, err)
	}
}

func TestFilteredViews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := registry.New(registry.Config{})
		put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, []string{"math"}, "add", "sub"))
		put(t, reg, spec("text", "1.0.0", &memBackend{version: "1.0.0"}, []string{"Text"}, "text"))
		s := newServer(t, reg, nil)
		math := serveMem(t, s, Filter{Tags: []string{"MATH"}})
		ro := serveMem(t, s, Filter{ReadOnly: true})
		bySkill := serveMem(t, s, Filter{Skills: []string{"text"}})
		if got := math.names(); got != "calc.add,calc.sub" {
			t.Errorf("tags=math: %s", got)
		}
		if got := ro.names(); got != "calc.add" {
			t.Errorf("read_only: %s", got)
		}
		if got := bySkill.names(); got != "text.text" {
			t.Errorf("skills=text: %s", got)
		}
		if _, err := math.call("text.text", nil); err == nil || !strings.Contains(err.Error(), "not offered on this endpoint") {
			t.Errorf("call outside the filter: %v", err)
		}
		for _, c := range []*memClient{math, ro, bySkill} {
			c.settled(time.Second) // whatever the views' first sync sent
		}
		// A change to text is not math's business, nor read_only's (text
		// has no read-only tool).
		put(t, reg, spec("text", "1.1.0", &memBackend{version: "1.1.0"}, []string{"text"}, "text"))
		if n := bySkill.settled(time.Second); n != 1 {
			t.Errorf("skills=text got %d notifications for a change to text, want 1", n)
		}
		if n := math.settled(0); n != 0 {
			t.Errorf("tags=math got %d notifications for a change to text", n)
		}
		if n := ro.settled(0); n != 0 {
			t.Errorf("read_only got %d notifications for a change to text", n)
		}
	})
}

func TestShowUnavailable(t *testing.T) {
	reg := registry.New(registry.Config{})
	b := &memBackend{version: "1.0.0"}
	put(t, reg, spec("calc", "1.0.0", b, nil, "add"))
	s := newServer(t, reg, func(c *Config) { c.ShowUnavailable = true })
	c := serveMem(t, s, Filter{})
	reg.SetAvailable("calc", b, false, "crashed")
	if !c.waitChanged(2 * time.Second) {
		t.Fatal("no list_changed")
	}
	tools := c.list()
	if len(tools) != 1 || tools[0].Meta[MetaAvailable] != false || !strings.HasPrefix(tools[0].Description, "[unavailable") {
		t.Fatalf("unavailable tool listed as %+v", tools)
	}
	res, err := c.call("calc.add", map[string]any{"n": 1})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "restarting") {
		t.Fatalf("call: %v %v", res, err)
	}
}

func TestResultShapes(t *testing.T) {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, nil, "add", "fail", "text"))
	s := newServer(t, reg, nil)
	c := serveMem(t, s, Filter{})

	res, err := c.call("calc.add", map[string]any{"n": 2})
	if err != nil || res.IsError {
		t.Fatalf("add: %v %v", res, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["version"] != "1.0.0" || sc["tool"] != "add" {
		t.Errorf("structuredContent = %v", res.StructuredContent)
	}
	if !strings.Contains(resultText(res), `"version":"1.0.0"`) {
		t.Errorf("text = %q", resultText(res))
	}
	// No arguments at all is an empty object.
	if res, err := c.call("calc.add", nil); err != nil || res.IsError {
		t.Errorf("add without arguments: %v %v", res, err)
	}

	res, _ = c.call("calc.text", nil)
	if sc, _ := res.StructuredContent.(map[string]any); resultText(res) != "plain text" || sc["result"] != "plain text" {
		t.Errorf("string result: text %q, structured %v", resultText(res), res.StructuredContent)
	}

	res, _ = c.call("calc.fail", nil)
	if !res.IsError || resultText(res) != "tool_error: the tool refuses" || res.StructuredContent != nil {
		t.Errorf("tool error: %+v %q", res, resultText(res))
	}
	e, _ := res.Meta[MetaError].(map[string]any)
	if e["code"] != "tool_error" || e["details"].(map[string]any)["why"] != "testing" {
		t.Errorf("error _meta = %v", res.Meta)
	}

	res, _ = c.call("calc.add", map[string]any{"n": -1, "extra": true})
	if !res.IsError || !strings.Contains(resultText(res), "invalid_arguments") || !strings.Contains(resultText(res), "/n") {
		t.Errorf("invalid arguments: %q", resultText(res))
	}
}

func TestMapAnnotations(t *testing.T) {
	f, tr := false, true
	for _, tc := range []struct {
		in                    registry.Annotations
		ro, idem              bool
		destructive, openness *bool
	}{
		{registry.Annotations{}, false, false, nil, nil},
		{registry.Annotations{ReadOnly: true, Idempotent: true}, true, true, &f, &f},
		{registry.Annotations{Destructive: true}, false, false, &tr, &f},
		{registry.Annotations{OpenWorld: true, Idempotent: true}, false, true, &f, &tr},
		{registry.Annotations{ReadOnly: true, Destructive: true}, true, false, &f, &f}, // read-only wins
	} {
		got := mapAnnotations(tc.in)
		if got.ReadOnlyHint != tc.ro || got.IdempotentHint != tc.idem || !samePtr(got.DestructiveHint, tc.destructive) || !samePtr(got.OpenWorldHint, tc.openness) {
			t.Errorf("%+v → %+v", tc.in, got)
		}
	}
}

func samePtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestOutputSchema(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		wrapped  bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`, false},
		{`{"type":"object","properties":{"a":true,"b":false}}`, `{"properties":{"a":{},"b":{"not":{}}},"type":"object"}`, false},
		{`{"type":"string"}`, `{"additionalProperties":false,"properties":{"result":{"type":"string"}},"required":["result"],"type":"object"}`, true},
		{`{"type":"array","items":{"$ref":"#/$defs/x"},"$defs":{"x":{"type":"integer"}},"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
			`{"$defs":{"x":{"type":"integer"}},"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"result":{"items":{"$ref":"#/$defs/x"},"type":"array"}},"required":["result"],"type":"object"}`, true},
		{`{"anyOf":[{"type":"object"},{"type":"null"}]}`, `{"additionalProperties":false,"properties":{"result":{"anyOf":[{"type":"object"},{"type":"null"}]}},"required":["result"],"type":"object"}`, true},
		{`true`, `{"additionalProperties":false,"properties":{"result":{}},"required":["result"],"type":"object"}`, true},
		{`{"type":"number","maximum":1e400}`, `{"additionalProperties":false,"properties":{"result":{"maximum":1e400,"type":"number"}},"required":["result"],"type":"object"}`, true},
	} {
		got, wrapped := outputSchema(json.RawMessage(tc.in))
		if string(got) != tc.want || wrapped != tc.wrapped {
			t.Errorf("outputSchema(%s)\n = %s, %v\nwant %s, %v", tc.in, got, wrapped, tc.want, tc.wrapped)
		}
	}
	in := json.RawMessage(`{"type":"object","properties":{"x":true}}`)
	if got := normalizeObjectSchema(in); string(got) != `{"properties":{"x":{}},"type":"object"}` {
		t.Errorf("normalizeObjectSchema = %s", got)
	}
	plain := json.RawMessage(`{"type":"object", "properties":{"x":{"type":"integer"}}}`)
	if got := normalizeObjectSchema(plain); string(got) != string(plain) {
		t.Errorf("an ordinary schema was rewritten: %s", got)
	}
}

func TestResultFor(t *testing.T) {
	res := resultFor(&registry.Result{Result: json.RawMessage(`[1,2]`), Skill: "s", Version: "1.0.0", Duration: 1500 * time.Microsecond}, false)
	if res.StructuredContent != nil || resultText(res) != "[1,2]" || res.Meta[MetaDurationMS] != 1.5 {
		t.Errorf("array without a wrapped schema: %+v", res)
	}
	res = resultFor(&registry.Result{Result: json.RawMessage(`[1,2]`)}, true)
	b, _ := json.Marshal(res.StructuredContent)
	if string(b) != `{"result":[1,2]}` {
		t.Errorf("wrapped: %s", b)
	}
	e := errorResult(registry.Errorf(registry.CodeOverloaded, "skill s is at its limit of 2 concurrent calls"))
	if !e.IsError || resultText(e) != "overloaded: skill s is at its limit of 2 concurrent calls (retryable)" {
		t.Errorf("error result text = %q", resultText(e))
	}
}

func TestHTTPDrainLetsCallsFinish(t *testing.T) {
	reg := registry.New(registry.Config{})
	b := &memBackend{version: "1.0.0", started: make(chan struct{}, 1), gate: make(chan struct{})}
	put(t, reg, spec("slow", "1.0.0", b, nil, "add"))
	s := newServer(t, reg, nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	connect := func() (*mcpsdk.ClientSession, error) {
		return sdkClient(make(chan struct{}, 8)).Connect(context.Background(),
			&mcpsdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: tr}}, nil)
	}
	cs, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var wg sync.WaitGroup
	var res *mcpsdk.CallToolResult
	var callErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, callErr = cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "slow.add", Arguments: map[string]any{"n": 1}})
	}()
	<-b.started
	s.Drain()
	if cs2, err := connect(); err == nil {
		cs2.Close()
		t.Error("a new session was accepted while draining")
	}
	close(b.gate)
	wg.Wait()
	if callErr != nil || res.IsError {
		t.Fatalf("the call in flight during the drain: %v %v", res, callErr)
	}
	// Once its call answered, the session's event stream was ended.
	if !waitFor(2*time.Second, func() bool {
		s.http.mu.Lock()
		defer s.http.mu.Unlock()
		return len(s.http.streams) == 0
	}) {
		t.Error("the idle session's event stream is still open after the drain")
	}
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func TestHTTPRefusals(t *testing.T) {
	s := newServer(t, registry.New(registry.Config{}), func(c *Config) { c.MaxViews = 2 })
	h := s.Handler()
	do := func(target string, hdr map[string]string) int {
		r := httptest.NewRequest("POST", target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if code := do("/mcp?read_only=perhaps", nil); code != http.StatusBadRequest {
		t.Errorf("bad filter: %d", code)
	}
	if code := do("/mcp", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("cross-origin: %d", code)
	}
	do("/mcp?tags=a", nil) // the second view; the zero filter's is the first
	if code := do("/mcp?tags=b", nil); code != http.StatusTooManyRequests {
		t.Errorf("one filter too many: %d", code)
	}
	s.Close()
	if code := do("/mcp", nil); code != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d", code)
	}
}

func TestHTTPSessionsIdleTimeoutAndPings(t *testing.T) {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, nil, "add"))
	s := newServer(t, reg, func(c *Config) { c.SessionTimeout, c.KeepAlive = 600*time.Millisecond, 150*time.Millisecond })
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	connect := func(listen bool) *mcpsdk.ClientSession {
		cs, err := sdkClient(make(chan struct{}, 8)).Connect(context.Background(), &mcpsdk.StreamableClientTransport{
			Endpoint: ts.URL, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: !listen,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	listening, silent := connect(true), connect(false)
	time.Sleep(2 * time.Second) // over three idle timeouts
	if _, err := listening.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "calc.add", Arguments: map[string]any{}}); err != nil {
		t.Errorf("a listening client lost its session while idle: %v", err)
	}
	if _, err := silent.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "calc.add", Arguments: map[string]any{}}); err == nil {
		t.Error("an idle session without an event stream was never closed")
	}
}
