package mcp

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// view is the go-sdk server of one filter: its tool set mirrors the
// registry's tools that pass the filter.
type view struct {
	s      *Server
	filter Filter
	srv    *mcpsdk.Server

	// discovery is the endpoint's mode. With DiscoverySearch the view
	// lists the discovery tools and the registry tools its session loaded
	// (a view per session); loadable is false for the shared view of
	// sessionless requests, which have no session to load into.
	discovery Discovery
	loadable  bool

	mu     sync.Mutex        // guards gen, synced, tools, loaded and resources; serializes syncs
	gen    uint64            // registry generation last mirrored
	synced bool              // gen is meaningful
	tools  map[string]string // name → fingerprint of what srv holds
	loaded map[string]bool   // discovery: the tools this session loaded

	resources map[string]string // skill file URI → digest of what srv holds

	lastUsed   time.Time // guarded by s.viewsMu
	perSession bool      // an HTTP discovery session's own view; guarded by s.viewsMu
}

// sync mirrors the current snapshot into srv as a diff: tools that are gone
// are removed, new or changed ones (re)added, unchanged ones left alone. The
// go-sdk announces each change to connected clients (merging what happens
// within a few milliseconds into one notification), so a publication that
// changes nothing this view shows costs its clients nothing.
func (v *view) sync() {
	v.mu.Lock()
	defer v.mu.Unlock()
	snap := v.s.reg.Snapshot()
	if v.synced && v.gen == snap.Gen() {
		return
	}
	wanted := map[string]wantTool{}
	if v.discovery == DiscoverySearch {
		wanted = discoveryTools(v.loadable)
	}
	for _, t := range snap.Tools() {
		if !v.filter.Match(t) || (v.discovery == DiscoverySearch && !v.loaded[t.Name]) {
			continue
		}
		avail := t.Available()
		if !avail && !v.s.cfg.ShowUnavailable {
			continue
		}
		tool, fp := v.s.mapping(t).form(avail)
		wanted[t.Name] = wantTool{tool, fp}
	}
	mirror(v.srv, v.tools, wanted, v.add)
	v.gen, v.synced = snap.Gen(), true
}

func (v *view) add(t *mcpsdk.Tool) bool {
	h := v.handle
	if v.discovery == DiscoverySearch && !strings.Contains(t.Name, ".") {
		h = v.discoveryHandler(t.Name)
	}
	return addTool(v.srv, t, h, v.s.log)
}

// listed reports whether srv holds a tool of that name.
func (v *view) listed(name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.tools[name]
	return ok
}

func (v *view) handle(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	return v.s.invoke(ctx, v, req.Params.Name, req.Params.Arguments)
}

// middleware makes a list or call that arrives inside the debounce window
// sync the view first, so a client never lists, or is refused, a tool set
// older than the registry's. A call to a tool the view does not list (its
// skill is restarting, it came back a moment ago, or the client uses the
// skill__tool spelling) still goes to the registry, which says why it
// cannot be served instead of a bare "unknown tool".
func (v *view) middleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		switch method {
		case "tools/list":
			v.sync()
		case "tools/call":
			v.sync()
			if r, ok := req.(*mcpsdk.CallToolRequest); ok && r.Params != nil && !v.listed(r.Params.Name) {
				res, err := v.s.invoke(ctx, v, r.Params.Name, r.Params.Arguments)
				if err != nil {
					return nil, err // not a typed nil inside the interface
				}
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// wantTool is a tool a server should hold and the fingerprint that tells
// whether what it holds is still current.
type wantTool struct {
	tool *mcpsdk.Tool
	fp   string
}

// mirror makes srv hold exactly the tools in want, as a diff: the tools no
// longer wanted are removed in one call (so clients get one list_changed),
// new or changed ones are (re)added in name order, and unchanged ones are
// left alone. have maps the names srv holds to their fingerprints and is
// updated to match; add hands one tool to srv and reports whether srv took
// it. The caller serializes calls for one srv.
func mirror(srv *mcpsdk.Server, have map[string]string, want map[string]wantTool, add func(*mcpsdk.Tool) bool) {
	var gone []string
	for name := range have {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(have, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		if have[name] == w.fp {
			continue
		}
		if add(w.tool) {
			have[name] = w.fp
		}
	}
}

// addTool hands one tool to the go-sdk, which panics on definitions it
// refuses. Every tool has been validated before it gets here (by the
// registry, or by the daemon for the bridge), so a panic is a bug: it is
// logged and the tool left out rather than taking the process down.
func addTool(srv *mcpsdk.Server, t *mcpsdk.Tool, h mcpsdk.ToolHandler, log hclog.Logger) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("tool refused by the MCP SDK; not listed", "tool", t.Name, "panic", r)
			ok = false
		}
	}()
	srv.AddTool(t, h)
	return true
}
