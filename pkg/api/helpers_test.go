package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/pkg/api"
	"github.com/skillhost/skillhost/pkg/events"
	"github.com/skillhost/skillhost/pkg/registry"
)

// fakeSkills is the loader side of the API in memory, already in the API's
// wire types as pkg/host converts them: fixed skills, and an error to
// answer each operator action with.
type fakeSkills struct {
	skills   []api.Skill
	problems []api.Problem
	ready    bool
	err      error // what Rescan, Disable, Enable, Pin and Unpin answer

	mu    sync.Mutex // guards calls
	calls []string
}

// Skills answers a copy, as the interface asks: the API adds to it.
func (f *fakeSkills) Skills() api.SkillList {
	return api.SkillList{Skills: slices.Clone(f.skills), Problems: f.problems}
}
func (f *fakeSkills) Skill(name string) (api.Skill, bool) {
	for _, s := range f.skills {
		if s.Name == name {
			return s, true
		}
	}
	return api.Skill{}, false
}
func (f *fakeSkills) Ready() bool { return f.ready }
func (f *fakeSkills) act(call string) error {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
	return f.err
}
func (f *fakeSkills) Rescan(context.Context) error              { return f.act("rescan") }
func (f *fakeSkills) Disable(_ context.Context, s string) error { return f.act("disable " + s) }
func (f *fakeSkills) Enable(_ context.Context, s string) error  { return f.act("enable " + s) }
func (f *fakeSkills) Pin(_ context.Context, s, v string) error  { return f.act("pin " + s + " " + v) }
func (f *fakeSkills) Unpin(_ context.Context, s string) error   { return f.act("unpin " + s) }

var _ api.Skills = (*fakeSkills)(nil)

// fixtureSkills is a tree with one of each kind of skill: one serving with
// an older version stopped, one whose only version is invalid, one
// disabled and pinned.
func fixtureSkills() *fakeSkills {
	started := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	return &fakeSkills{ready: true, skills: []api.Skill{
		{Name: "calc", Kind: api.KindBinary, Active: "1.1.0", Versions: []api.Version{
			{Version: "1.1.0", State: "active", Runtime: "go-plugin", PID: 4242, StartedAt: &started, InFlight: 1, Restarts: 2, Tools: []string{"calc.add", "calc.slow"}},
			{Version: "1.0.0", State: "stopped"},
		}},
		{Name: "broken", Kind: api.KindBinary, Reason: "no valid version", Versions: []api.Version{
			{Version: "0.1.0", State: "invalid", LastError: "manifest: 1 problem",
				Problems: []api.Problem{{Path: "$.version", Message: `"0.2.0" does not match the version folder "0.1.0"`}}},
		}},
		{Name: "text", Kind: api.KindBinary, Disabled: true, Pinned: "2.0.0", Reason: "disabled by an operator", Versions: []api.Version{}},
	}, problems: []api.Problem{{Path: "stray.txt", Message: "not a skill folder"}}}
}

// calcBackend serves the fixture's calc tools in memory.
type calcBackend struct{}

func (calcBackend) Acquire() bool { return true }
func (calcBackend) Release()      {}
func (calcBackend) Invoke(ctx context.Context, tool string, args []byte, _ int64) ([]byte, error) {
	switch tool {
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	case "fail":
		return nil, registry.Errorf(registry.CodeToolError, "calc.fail refused: always")
	}
	return []byte(`{"sum":3}`), nil
}

// fixtureRegistry serves calc 1.1.0's tools.
func fixtureRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg := registry.New(registry.Config{})
	_, err := reg.Put(registry.SkillSpec{Name: "calc", Version: "1.1.0", Description: "arithmetic", Tags: []string{"math"},
		Backend: calcBackend{}, Limits: registry.Limits{Timeout: 50 * time.Millisecond, MaxRequestBytes: 256},
		Tools: []registry.ToolSpec{
			{Name: "add", Description: "Add two numbers.", Tags: []string{"arith"}, Annotations: registry.Annotations{ReadOnly: true, Idempotent: true},
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}}}`)},
			{Name: "slow", Description: "Never answers in time.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "fail", Description: "Always refuses.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// newTestServer is the API over the fixtures, with an event bus.
func newTestServer(t testing.TB, skills *fakeSkills) *api.Server {
	t.Helper()
	bus := events.New(16)
	srv := api.New(api.Config{Registry: fixtureRegistry(t), Skills: skills, Events: bus, Catalog: fixtureCatalog(t)})
	t.Cleanup(srv.Shutdown)
	return srv
}

// do serves one request in process and returns the answer.
func do(t testing.TB, h http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// apiError decodes an answer in the one error shape, strictly.
func apiError(t testing.TB, w *httptest.ResponseRecorder) *registry.Error {
	t.Helper()
	var body struct {
		Error *registry.Error `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Error == nil {
		t.Fatalf("status %d, not the error shape: %s (%v)", w.Code, w.Body, err)
	}
	return body.Error
}
