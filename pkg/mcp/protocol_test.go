package mcp

// Protocol 2026-07-28 (sessionless) beside the session protocol: the
// official go-sdk client pinned to each version, over streamable HTTP and
// over a session transport (what stdio is).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

const (
	v20260728 = "2026-07-28"
	v20251125 = "2025-11-25"
)

// httpClient connects the go-sdk client to url at version.
func httpClient(t *testing.T, url, version string, changed chan struct{}) *mcpsdk.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := sdkClient(changed).Connect(context.Background(),
		&mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: tr}},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcpsdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func waitSignal(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5 s", what)
	}
}

func TestHTTPServesBothProtocols(t *testing.T) {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, []string{"math"}, "add"))
	s := newServer(t, reg, nil)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close) // after the clients' cleanups: Close waits for their streams

	modernChanged, legacyChanged := make(chan struct{}, 8), make(chan struct{}, 8)
	modern := httpClient(t, ts.URL, v20260728, modernChanged)
	legacy := httpClient(t, ts.URL, v20251125, legacyChanged)
	if got := modern.InitializeResult().ProtocolVersion; got != v20260728 {
		t.Fatalf("a client asking for %s negotiated %s", v20260728, got)
	}
	if got := legacy.InitializeResult().ProtocolVersion; got != v20251125 {
		t.Fatalf("a client asking for %s negotiated %s", v20251125, got)
	}
	if modern.ID() != "" {
		t.Errorf("the sessionless client holds session %q", modern.ID())
	}
	if legacy.ID() == "" {
		t.Error("the session client has no Mcp-Session-Id")
	}
	for _, cs := range []*mcpsdk.ClientSession{modern, legacy} {
		if got := toolNames(t, cs); len(got) != 1 || got[0] != "calc.add" {
			t.Errorf("tools = %v", got)
		}
		res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "calc.add", Arguments: map[string]any{"n": 2}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %v", res, err)
		}
		if _, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "ghost.x"}); err == nil {
			t.Error("an unknown tool was not a protocol error")
		}
	}

	// A change reaches both: the old client on its session stream, the new
	// one on its subscriptions/listen stream.
	put(t, reg, spec("text", "1.0.0", &memBackend{version: "1.0.0"}, nil, "text"))
	waitSignal(t, modernChanged, "list_changed for the 2026-07-28 client")
	waitSignal(t, legacyChanged, "list_changed for the 2025-11-25 client")
	for _, cs := range []*mcpsdk.ClientSession{modern, legacy} {
		if got := toolNames(t, cs); len(got) != 2 {
			t.Errorf("after the change: tools = %v", got)
		}
	}
}

func TestHTTPModernFilterAndDrain(t *testing.T) {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, []string{"math"}, "add"))
	put(t, reg, spec("text", "1.0.0", &memBackend{version: "1.0.0"}, nil, "text"))
	s := newServer(t, reg, nil)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close) // after the clients' cleanups: Close waits for their streams
	cs := httpClient(t, ts.URL+"?tags=math", v20260728, make(chan struct{}, 8))
	if got := toolNames(t, cs); len(got) != 1 || got[0] != "calc.add" {
		t.Errorf("filtered tools = %v", got)
	}
	if _, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "text.text"}); err == nil {
		t.Error("a tool outside the filter was callable")
	}
	// The listen stream is tracked like a GET stream: a drain ends it, so
	// that a shutdown does not wait for a client that only listens.
	if !waitFor(2*time.Second, func() bool {
		s.http.mu.Lock()
		defer s.http.mu.Unlock()
		return len(s.http.streams) == 1
	}) {
		t.Fatal("the subscriptions/listen stream is not tracked")
	}
	s.Drain()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	if late, err := sdkClient(make(chan struct{}, 1)).Connect(context.Background(),
		&mcpsdk.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: tr}},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: v20260728}); err == nil {
		late.Close()
		t.Error("a new sessionless client was served while draining")
	}
	if !waitFor(2*time.Second, func() bool {
		s.http.mu.Lock()
		defer s.http.mu.Unlock()
		return len(s.http.streams) == 0
	}) {
		t.Error("the listen stream outlived the drain")
	}
}

func TestTransportServesModernProtocol(t *testing.T) {
	reg := registry.New(registry.Config{})
	put(t, reg, spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, nil, "add"))
	s := newServer(t, reg, nil)
	ct, st := mcpsdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.ServeTransport(ctx, st, Filter{}) }()
	changed := make(chan struct{}, 8)
	cs, err := sdkClient(changed).Connect(ctx, ct, &mcpsdk.ClientSessionOptions{ProtocolVersion: v20260728})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); cancel(); <-done }()
	if got := cs.InitializeResult().ProtocolVersion; got != v20260728 {
		t.Fatalf("negotiated %s", got)
	}
	put(t, reg, spec("text", "1.0.0", &memBackend{version: "1.0.0"}, nil, "text"))
	waitSignal(t, changed, "list_changed over the session transport at 2026-07-28")
	if got := toolNames(t, cs); len(got) != 2 {
		t.Errorf("tools = %v", got)
	}
}
