package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/pkg/registry"
)

// ErrUnreachable is returned by ServeBridge when the daemon cannot be
// reached at start.
var ErrUnreachable = errors.New("skillhost daemon unreachable")

// BridgeConfig configures ServeBridge. Endpoint is required.
type BridgeConfig struct {
	// Endpoint is the daemon's MCP endpoint, with any filter, e.g.
	// http://127.0.0.1:7070/mcp?tags=math.
	Endpoint string
	// Token is sent as a bearer token when set.
	Token string
	// HTTPClient talks to the daemon (e.g. over a unix socket). Default: a
	// plain client.
	HTTPClient *http.Client
	Logger     hclog.Logger
	// Version identifies the bridge to the stdio client. Default: the
	// module version of the binary.
	Version string
	// ConnectTimeout bounds the first connection. Default 10 s.
	ConnectTimeout time.Duration
	// RetryMax caps the backoff between reconnection attempts after the
	// daemon went away. Default 5 s.
	RetryMax time.Duration
}

// ServeBridge serves one MCP client over t (stdio, for a desktop client)
// from a running daemon's streamable HTTP endpoint, until the client
// disconnects or ctx ends.
//
// The bridge is a go-sdk client of the daemon and a go-sdk server of its
// own client, not a byte pipe: it mirrors the daemon's tool list and passes
// notifications/tools/list_changed on, and it outlives the daemon's
// restarts. When the daemon goes away the last known tools stay listed and
// calls answer a retryable isError result while the bridge reconnects; once
// back, the list is fetched again and the client told if it changed. Only a
// daemon that cannot be reached at start is an error (ErrUnreachable), so
// that a misconfigured client shows a failed server rather than an empty one.
func ServeBridge(ctx context.Context, cfg BridgeConfig, t mcpsdk.Transport) error {
	if cfg.Endpoint == "" {
		return errors.New("mcp: BridgeConfig.Endpoint is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Version == "" {
		cfg.Version = moduleVersion()
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 5 * time.Second
	}
	b := &bridge{cfg: cfg, log: cfg.Logger, tools: map[string]string{}, changed: make(chan struct{}, 1)}
	slogger := sdkLogger(cfg.Logger)
	b.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "skillhost-bridge", Version: cfg.Version}, &mcpsdk.ClientOptions{
		Logger: slogger,
		// Called on the connection's reader: only signal.
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) { b.signal() },
		Capabilities:           &mcpsdk.ClientCapabilities{},
	})

	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	cs, err := b.dial(dctx)
	cancel()
	if err != nil {
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, cfg.Endpoint, err)
	}
	b.cs = cs
	instructions := ""
	if ir := cs.InitializeResult(); ir != nil {
		instructions = ir.Instructions
	}
	b.local = mcpsdk.NewServer(&mcpsdk.Implementation{Name: "skillhost", Title: "skillhost (bridge to " + cfg.Endpoint + ")", Version: cfg.Version},
		&mcpsdk.ServerOptions{
			Instructions: instructions, Logger: slogger,
			Capabilities: &mcpsdk.ServerCapabilities{Tools: &mcpsdk.ToolCapabilities{ListChanged: true}},
		})
	b.local.AddReceivingMiddleware(b.middleware)
	b.refresh(ctx)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.maintain(runCtx)
	}()
	err = serveSession(runCtx, b.local, t)
	stop()
	b.closeSession()
	b.wg.Wait()
	b.closeSession() // one the reconnect loop opened while stopping
	if ctx.Err() != nil {
		return nil
	}
	return err
}

type bridge struct {
	cfg    BridgeConfig
	log    hclog.Logger
	client *mcpsdk.Client
	local  *mcpsdk.Server

	mu    sync.Mutex // guards cs and tools
	cs    *mcpsdk.ClientSession
	tools map[string]string // name → fingerprint of what local holds

	refreshMu sync.Mutex    // serializes refreshes
	changed   chan struct{} // capacity 1: the daemon announced a change
	wg        sync.WaitGroup
}

func (b *bridge) signal() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *bridge) dial(ctx context.Context) (*mcpsdk.ClientSession, error) {
	hc := b.cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if b.cfg.Token != "" {
		c := *hc
		c.Transport = bearer{token: b.cfg.Token, next: hc.Transport}
		hc = &c
	}
	// The bridge speaks the session protocol to the daemon whatever its
	// own client speaks: the session's lifetime is how it learns that the
	// daemon went away (and reconnects), which the sessionless protocol
	// has no equivalent for.
	return b.client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: b.cfg.Endpoint, HTTPClient: hc},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: bridgeUpstreamVersion})
}

// bridgeUpstreamVersion is the protocol the bridge speaks to the daemon.
const bridgeUpstreamVersion = "2025-11-25"

type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

func (b *bridge) session() *mcpsdk.ClientSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cs
}

// lose drops cs (if it is still the current session) so that the
// maintainer reconnects.
func (b *bridge) lose(cs *mcpsdk.ClientSession) {
	b.mu.Lock()
	if b.cs == cs {
		b.cs = nil
	}
	b.mu.Unlock()
	cs.Close()
}

func (b *bridge) closeSession() {
	b.mu.Lock()
	cs := b.cs
	b.cs = nil
	b.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
}

// maintain follows the daemon: it refreshes the list when the daemon says
// it changed, and reconnects with capped backoff when the session ends.
func (b *bridge) maintain(ctx context.Context) {
	for ctx.Err() == nil {
		cs := b.session()
		if cs == nil {
			if cs = b.reconnect(ctx); cs == nil {
				return
			}
			b.log.Info("reconnected to the daemon", "endpoint", b.cfg.Endpoint)
			b.refresh(ctx)
		}
		lost := make(chan struct{})
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			cs.Wait()
			close(lost)
		}()
	follow:
		for {
			select {
			case <-ctx.Done():
				cs.Close()
				return
			case <-b.changed:
				b.refresh(ctx)
			case <-lost:
				break follow
			}
		}
		if ctx.Err() == nil {
			b.log.Warn("lost the daemon; keeping the last tool list and reconnecting", "endpoint", b.cfg.Endpoint)
		}
		b.lose(cs)
	}
}

func (b *bridge) reconnect(ctx context.Context) *mcpsdk.ClientSession {
	delay := 100 * time.Millisecond
	for {
		dctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
		cs, err := b.dial(dctx)
		cancel()
		if err == nil {
			b.mu.Lock()
			b.cs = cs
			b.mu.Unlock()
			return cs
		}
		b.log.Debug("daemon still unreachable", "endpoint", b.cfg.Endpoint, "error", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if delay *= 2; delay > b.cfg.RetryMax {
			delay = b.cfg.RetryMax
		}
	}
}

// refresh fetches the daemon's list and mirrors it into the local server
// as a diff; the go-sdk notifies the local client if anything changed.
func (b *bridge) refresh(ctx context.Context) {
	b.refreshMu.Lock()
	defer b.refreshMu.Unlock()
	cs := b.session()
	if cs == nil {
		return
	}
	remote := map[string]*mcpsdk.Tool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			if _, ok := daemonAnswer(err); !ok && ctx.Err() == nil {
				b.lose(cs)
			}
			b.log.Warn("cannot list the daemon's tools; keeping the last list", "error", err)
			return
		}
		remote[t.Name] = t
	}
	want := make(map[string]wantTool, len(remote))
	for name, t := range remote {
		want[name] = wantTool{t, fingerprint(t)}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	mirror(b.local, b.tools, want, b.add)
}

func (b *bridge) add(t *mcpsdk.Tool) bool { return addTool(b.local, t, b.call, b.log) }

// middleware refreshes before each list, so the client never lists an old
// set, and sends every call to the daemon, listed locally or not: the
// daemon decides (and explains) what it can serve.
func (b *bridge) middleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		switch method {
		case "tools/list":
			b.refresh(ctx)
		case "tools/call":
			if r, ok := req.(*mcpsdk.CallToolRequest); ok && r.Params != nil {
				res, err := b.call(ctx, r)
				if err != nil {
					return nil, err
				}
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

func (b *bridge) call(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	cs := b.session()
	if cs == nil {
		return b.unreachable(errors.New("reconnecting")), nil
	}
	args := json.RawMessage(req.Params.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: req.Params.Name, Arguments: args})
	if err != nil {
		if we, ok := daemonAnswer(err); ok {
			return nil, we // the daemon's own answer (unknown tool, ...)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		b.lose(cs)
		return b.unreachable(err), nil
	}
	return res, nil
}

// Codes the go-sdk uses for its own transport failures, as opposed to
// errors the daemon answered with.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// daemonAnswer returns err as the JSON-RPC error the daemon sent, or false
// when err is the connection failing.
func daemonAnswer(err error) (*jsonrpc.Error, bool) {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return nil, false
	}
	switch we.Code {
	case codeClientClosing, codeServerClosing, codeRejected:
		return nil, false
	}
	return we, true
}

func (b *bridge) unreachable(err error) *mcpsdk.CallToolResult {
	return errorResult(registry.Errorf(registry.CodeSkillUnavailable,
		"the skillhost daemon at %s is unreachable (%v); the bridge is reconnecting, retry shortly", b.cfg.Endpoint, err))
}
