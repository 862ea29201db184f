package mcp

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

func structuredOf[T any](t *testing.T, r *mcpsdk.CallToolResult) T {
	t.Helper()
	var out T
	if err := json.Unmarshal([]byte(resultText(r)), &out); err != nil {
		t.Fatalf("result %q: %v", resultText(r), err)
	}
	return out
}

func discoveryRegistry(t *testing.T) *registry.Registry {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, []string{"math"}, "add", "text"))
	put(t, reg, spec("files", "1.0.0", &memBackend{version: "1.0.0"}, []string{"io"}, "fail"))
	return reg
}

func TestDiscoveryFindLoadCall(t *testing.T) {
	reg := discoveryRegistry(t)
	s := newServer(t, reg, nil)
	c := serveEndpoint(t, s, Endpoint{Discovery: DiscoverySearch})
	other := serveEndpoint(t, s, Endpoint{Discovery: DiscoverySearch})
	if got := c.names(); got != "call_tool,find_tools,load_tools" {
		t.Fatalf("a discovery session starts with %q", got)
	}
	r, err := c.call(toolFind, map[string]any{"query": "does add", "limit": 2})
	if err != nil || r.IsError {
		t.Fatalf("find_tools: %v %v", r, err)
	}
	found := structuredOf[findResult](t, r)
	if len(found.Tools) == 0 || found.Tools[0].Name != "calc.add" || len(found.Tools[0].InputSchema) == 0 {
		t.Fatalf("find_tools found %+v", found)
	}
	r, err = c.call(toolLoad, map[string]any{"names": []string{"calc.add", "ghost.x"}})
	if err != nil || r.IsError {
		t.Fatalf("load_tools: %v %v", r, err)
	}
	if lr := structuredOf[loadResult](t, r); !slices.Equal(lr.Loaded, []string{"calc.add"}) || !slices.Equal(lr.Refused, []string{"ghost.x"}) {
		t.Errorf("load_tools answered %+v", lr)
	}
	if !c.waitChanged(5e9) {
		t.Error("no list_changed after load_tools")
	}
	if got := c.names(); got != "calc.add,call_tool,find_tools,load_tools" {
		t.Errorf("after loading: %q", got)
	}
	if got := other.names(); got != "call_tool,find_tools,load_tools" {
		t.Errorf("another session sees what this one loaded: %q", got)
	}
	if r, err := c.call("calc.add", map[string]any{"n": 1}); err != nil || r.IsError {
		t.Errorf("calling a loaded tool: %v %v", r, err)
	}
	r, err = other.call(toolCall, map[string]any{"name": "calc.text", "arguments": map[string]any{"n": 1}})
	if err != nil || r.IsError || resultText(r) != "plain text" {
		t.Errorf("call_tool: %v %v", r, err)
	}
	r, err = other.call(toolCall, map[string]any{"name": "ghost.x"})
	if err != nil || !r.IsError || !strings.Contains(resultText(r), "unknown_tool") {
		t.Errorf("call_tool of an unknown tool: %v %v", resultText(r), err)
	}
}

func TestDiscoveryBoundedByFilterAndCap(t *testing.T) {
	reg := discoveryRegistry(t)
	s := newServer(t, reg, func(c *Config) { c.MaxLoaded = 1 })
	c := serveEndpoint(t, s, Endpoint{Discovery: DiscoverySearch, Filter: Filter{ReadOnly: true}})
	r, _ := c.call(toolFind, map[string]any{"query": "does text fail add", "limit": 20})
	for _, ft := range structuredOf[findResult](t, r).Tools {
		if ft.Name != "calc.add" {
			t.Errorf("a read-only endpoint found the write tool %s", ft.Name)
		}
	}
	r, _ = c.call(toolLoad, map[string]any{"names": []string{"calc.text"}})
	if !r.IsError {
		t.Errorf("a read-only endpoint loaded a write tool: %s", resultText(r))
	}
	r, _ = c.call(toolCall, map[string]any{"name": "calc.text"})
	if !r.IsError {
		t.Errorf("a read-only endpoint called a write tool: %s", resultText(r))
	}
	// Tags narrow the endpoint's filter; they never widen it.
	r, _ = c.call(toolFind, map[string]any{"tags": []string{"io"}})
	if got := structuredOf[findResult](t, r).Tools; len(got) != 0 {
		t.Errorf("tags widened the filter: %+v", got)
	}

	reg2 := discoveryRegistry(t)
	put(t, reg2, spec("more", "1.0.0", &memBackend{version: "1.0.0"}, nil, "add"))
	s2 := newServer(t, reg2, func(c *Config) { c.MaxLoaded = 1 })
	c2 := serveEndpoint(t, s2, Endpoint{Discovery: DiscoverySearch})
	if r, _ := c2.call(toolLoad, map[string]any{"names": []string{"calc.add"}}); r.IsError {
		t.Fatalf("first load: %s", resultText(r))
	}
	r, _ = c2.call(toolLoad, map[string]any{"names": []string{"more.add"}})
	if lr := structuredOf[loadResult](t, r); !r.IsError || len(lr.Refused) != 1 || !strings.Contains(lr.Reasons[0], "cap") {
		t.Errorf("the cap did not hold: %s", resultText(r))
	}
}

func TestDiscoveryOverHTTP(t *testing.T) {
	reg := discoveryRegistry(t)
	s := newServer(t, reg, nil)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	changed := make(chan struct{}, 8)
	a := httpClient(t, ts.URL+"?discovery=search", v20251125, changed)
	b := httpClient(t, ts.URL+"?discovery=search", v20251125, make(chan struct{}, 8))
	plain := httpClient(t, ts.URL, v20251125, make(chan struct{}, 8))
	if got := toolNames(t, plain); len(got) != 3 {
		t.Errorf("without the mode: %v", got)
	}
	if _, err := a.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolLoad, Arguments: map[string]any{"names": []string{"calc.add"}}}); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changed, "list_changed after load_tools over HTTP")
	if got := toolNames(t, a); !slices.Contains(got, "calc.add") || len(got) != 4 {
		t.Errorf("the loading session lists %v", got)
	}
	if got := toolNames(t, b); len(got) != 3 {
		t.Errorf("another session lists %v", got)
	}
	// Sessionless (2026-07-28) requests find and call; there is no session
	// to load into.
	m := httpClient(t, ts.URL+"?discovery=search", v20260728, make(chan struct{}, 8))
	if got := toolNames(t, m); !slices.Equal(got, []string{toolCall, toolFind}) {
		t.Errorf("a sessionless discovery client lists %v", got)
	}
	r, err := m.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "calc.add", "arguments": map[string]any{"n": 1}}})
	if err != nil || r.IsError {
		t.Errorf("sessionless call_tool: %v %v", r, err)
	}
	if code := doPost(s, "/mcp?discovery=maybe"); code != 400 {
		t.Errorf("a bad discovery mode: %d", code)
	}
}

func doPost(s *Server, target string) int {
	r := httptest.NewRequest("POST", target, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w.Code
}

func TestDiscoveryConfigErrors(t *testing.T) {
	if _, err := New(Config{Registry: registry.New(registry.Config{}), Discovery: "maybe"}); err == nil || !strings.Contains(err.Error(), "maybe") {
		t.Errorf("New with a bad Discovery: %v", err)
	}
	// Every problem of an endpoint is reported at once.
	_, err := ParseEndpoint(map[string][]string{"read_only": {"perhaps"}, ParamDiscovery: {"maybe"}})
	if err == nil || !strings.Contains(err.Error(), "read_only") || !strings.Contains(err.Error(), "maybe") {
		t.Errorf("ParseEndpoint: %v", err)
	}
	if e, err := ParseEndpoint(map[string][]string{ParamDiscovery: {"Search"}, "tags": {"math"}}); err != nil || e.Discovery != DiscoverySearch || e.Query().Encode() != "discovery=search&tags=math" {
		t.Errorf("ParseEndpoint = %+v %v", e, err)
	}
}
