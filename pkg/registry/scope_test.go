package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// nestedRegistry has skill a (tool call: calls the tool named in its
// arguments, with its own ctx, as the loader's Host service does) and skill
// b (tool read, read-only; tool write, not), recording every NestedCall.
func nestedRegistry(t *testing.T, cfg Config) (*Registry, func() []NestedCall) {
	t.Helper()
	var mu sync.Mutex
	var nested []NestedCall
	cfg.OnNested = func(n NestedCall) {
		mu.Lock()
		nested = append(nested, n)
		mu.Unlock()
	}
	var r *Registry
	a := &memBackend{fn: func(ctx context.Context, tool string, args []byte) ([]byte, error) {
		var in struct {
			S string `json:"s"`
		}
		_ = json.Unmarshal(args, &in)
		if in.S == "" {
			return json.Marshal(map[string]any{"chain": CallChain(ctx), "id": CallID(ctx)})
		}
		next, rest, _ := strings.Cut(in.S, ",")
		res, err := r.Invoke(ctx, next, fmt.Appendf(nil, `{"n":0,"s":%q}`, rest))
		if err != nil {
			return nil, err
		}
		return res.Result, nil
	}}
	r = New(cfg)
	if _, err := r.Put(spec("a", "1.0.0", a, "call", "other")); err != nil {
		t.Fatal(err)
	}
	sb := spec("b", "1.0.0", a, "read", "write")
	sb.Tools[0].Annotations.ReadOnly = true
	if _, err := r.Put(sb); err != nil {
		t.Fatal(err)
	}
	return r, func() []NestedCall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(nested)
	}
}

func TestNestedCallCarriesChainAndIDs(t *testing.T) {
	r, nested := nestedRegistry(t, Config{})
	res, err := r.Invoke(context.Background(), "a.call", []byte(`{"n":0,"s":"b.read"}`))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Chain []string `json:"chain"`
		ID    string   `json:"id"`
	}
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.call", "b.read"}; !slices.Equal(out.Chain, want) {
		t.Errorf("chain seen by b.read = %v, want %v", out.Chain, want)
	}
	n := nested()
	if len(n) != 1 {
		t.Fatalf("OnNested saw %d calls, want 1: %+v", len(n), n)
	}
	if n[0].ID != out.ID || n[0].ParentID == "" || n[0].ParentID == n[0].ID || n[0].Caller != "a.call" || n[0].Tool != "b.read" || n[0].Depth != 2 || n[0].Code != "" {
		t.Errorf("OnNested = %+v (b.read's own id %q)", n[0], out.ID)
	}
}

func TestNestedCallRefusals(t *testing.T) {
	cases := []struct {
		name, start, path string
		permit            Permit
		cfg               Config
		reason, message   string
	}{
		{name: "cycle", start: "a.call", path: "a.other,a.call", reason: "cycle",
			message: "call cycle: a.other calls a.call, which is already on its chain (a.call → a.other → a.call)"},
		{name: "self", start: "a.call", path: "a.call", reason: "cycle", message: "a.call → a.call"},
		{name: "depth", start: "a.call", path: "a.other,b.read", cfg: Config{MaxCallDepth: 2}, reason: "depth",
			message: "a.other may not call b.read: the chain a.call → a.other → b.read would be 3 calls deep, over the limit of 2"},
		{name: "read-only caller", start: "a.call", path: "b.write", reason: "scope",
			permit: func(t *Tool) error {
				if t.Name != "a.call" && !t.Annotations.ReadOnly {
					return Errorf(CodeForbidden, "%s is not read-only", t.Name)
				}
				return nil
			},
			message: "a.call may not call b.write: the scope of the call to a.call refuses it (b.write is not read-only)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, nested := nestedRegistry(t, c.cfg)
			_, err := r.InvokePermitted(context.Background(), c.start, fmt.Appendf(nil, `{"n":0,"s":%q}`, c.path), c.permit)
			e := AsError(err)
			if e.Code != CodeForbidden || e.Details["reason"] != c.reason || !strings.Contains(e.Message, c.message) {
				t.Fatalf("err = %v (details %v), want forbidden, reason %s, message with %q", err, e.Details, c.reason, c.message)
			}
			if n := nested(); len(n) == 0 || n[len(n)-1].Code != CodeForbidden {
				t.Errorf("OnNested did not see the refused call: %+v", n)
			}
		})
	}
}

// TestNestedCallKeepsTheDeadline: the callee's context has the deadline
// of its caller, never a later one, even when its own skill's timeout is
// longer.
func TestNestedCallKeepsTheDeadline(t *testing.T) {
	r, _ := nestedRegistry(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, _ := ctx.Deadline()
	var got time.Time
	b := &memBackend{fn: func(ctx context.Context, tool string, args []byte) ([]byte, error) {
		got, _ = ctx.Deadline()
		return []byte(`{}`), nil
	}}
	sp := spec("c", "1.0.0", b, "deadline")
	sp.Limits.Timeout = time.Hour
	if _, err := r.Put(sp); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Invoke(ctx, "a.call", []byte(`{"n":0,"s":"c.deadline"}`)); err != nil {
		t.Fatal(err)
	}
	if got.IsZero() || got.After(want) {
		t.Errorf("the nested call's deadline is %v, after its caller's %v", got, want)
	}
}

// TestInvokeAllowedBindsOneCall: allow (a skill's uses) refuses what it
// does not list, but not what the callee then calls.
func TestInvokeAllowedBindsOneCall(t *testing.T) {
	r, nested := nestedRegistry(t, Config{})
	onlyA := func(t *Tool) error {
		if t.Skill != "a" {
			return Errorf(CodeForbidden, "%s is not in uses", t.Name)
		}
		return nil
	}
	ctx := context.Background()
	if _, err := r.InvokeAllowed(ctx, "b.read", []byte(`{"n":0}`), onlyA); CodeOf(err) != CodeForbidden || !strings.Contains(err.Error(), "b.read is not in uses") {
		t.Fatalf("b.read with uses a.* = %v", err)
	}
	if _, err := r.InvokeAllowed(ctx, "a.other", []byte(`{"n":0,"s":"b.read"}`), onlyA); err != nil {
		t.Fatalf("a.other, which calls b.read itself: %v", err)
	}
	if n := nested(); len(n) != 1 || n[0].Caller != "a.other" || n[0].Tool != "b.read" || n[0].Code != "" {
		t.Errorf("nested calls: %+v", n)
	}
}

func TestCallIDOutsideACall(t *testing.T) {
	if id, chain := CallID(context.Background()), CallChain(context.Background()); id != "" || chain != nil {
		t.Errorf("CallID, CallChain outside a call = %q, %v", id, chain)
	}
}
