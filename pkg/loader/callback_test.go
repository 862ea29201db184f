package loader

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/registry"
)

// relayEnv turns on the test skill's relay tool, which calls the tool it is
// given through the host (sdk.Call).
var relayEnv = map[string]string{"TESTSKILL_RELAY": "1"}

func (h *harness) installUses(skill, version string, uses ...string) {
	h.t.Helper()
	if _, err := testenv.Install(h.root, testenv.Version{Skill: skill, Version: version, Binary: testSkillBin, Env: relayEnv, Uses: uses}); err != nil {
		h.t.Fatal(err)
	}
}

// relayArgs is the relay tool's arguments for a chain of calls: relayArgs("a.relay",
// "b.echo") asks the first relay to call a.relay, which calls b.echo.
func relayArgs(tools ...string) string {
	args := `{"msg":"hi"}`
	for i := len(tools) - 1; i >= 0; i-- {
		args = fmt.Sprintf(`{"tool":%q,"args":%s}`, tools[i], args)
	}
	return args
}

type relayResult struct {
	Version string          `json:"version"`
	CallID  string          `json:"call_id"`
	Result  json.RawMessage `json:"result"`
}

func TestNestedCalls(t *testing.T) {
	var nestedMu sync.Mutex
	var nested []registry.NestedCall
	reg := registry.New(registry.Config{OnNested: func(n registry.NestedCall) {
		nestedMu.Lock()
		nested = append(nested, n)
		nestedMu.Unlock()
	}})
	h := newHarness(t, func(c *Config) { c.Registry = reg })
	h.reg = reg
	h.installUses("front", "1.0.0", "back.*")
	h.installUses("back", "1.0.0", "front.relay")
	h.installUses("plain", "1.0.0") // relay, but no uses: no Host service
	// A skill that makes its own certificate (go-plugin's AutoMTLS) is
	// still asked for it on the Host service's stream.
	if _, err := testenv.Install(h.root, testenv.Version{Skill: "legacy", Version: "1.0.0", Binary: testSkillBin,
		Env: map[string]string{"TESTSKILL_RELAY": "1", "TESTSKILL_MODE": "automtls"}, Uses: []string{"back.echo"}}); err != nil {
		t.Fatal(err)
	}
	h.start()
	ctx := context.Background()

	t.Run("declared", func(t *testing.T) {
		res, err := h.reg.Invoke(ctx, "front.relay", []byte(relayArgs("back.echo")))
		if err != nil {
			t.Fatal(err)
		}
		var out relayResult
		var echo echoResult
		if err := json.Unmarshal(res.Result, &out); err != nil || json.Unmarshal(out.Result, &echo) != nil {
			t.Fatalf("result %s: %v", res.Result, err)
		}
		if out.Version != "1.0.0" || echo.Msg != "hi" || out.CallID == "" {
			t.Fatalf("front.relay → back.echo = %s", res.Result)
		}
		nestedMu.Lock()
		defer nestedMu.Unlock()
		if len(nested) != 1 || nested[0].ParentID != out.CallID || nested[0].Caller != "front.relay" || nested[0].Tool != "back.echo" || nested[0].Code != "" {
			t.Fatalf("nested calls seen: %+v; the caller's id is %s", nested, out.CallID)
		}
	})

	t.Run("own certificate", func(t *testing.T) {
		if _, err := h.reg.Invoke(ctx, "legacy.relay", []byte(relayArgs("back.echo"))); err != nil {
			t.Fatal(err)
		}
	})

	refusals := []struct {
		name, args, code string
		permit           registry.Permit
		message          []string
	}{
		{name: "undeclared", args: relayArgs("plain.echo"), code: "forbidden",
			message: []string{"skill front (calling from front.relay) may not call plain.echo", "uses: back.*"}},
		{name: "cycle", args: relayArgs("back.relay", "front.relay", "back.echo"), code: "tool_error",
			message: []string{"call cycle: back.relay calls front.relay, which is already on its chain (front.relay → back.relay → front.relay)"}},
		{name: "unknown tool", args: relayArgs("back.nope"), code: "unknown_tool", message: []string{"back.nope"}},
		{name: "no uses", args: relayArgs("front.echo"), code: "no_host", message: []string{"uses"}},
		{name: "the caller's filter", args: relayArgs("back.sleep"), code: "forbidden",
			permit:  filterPermit(registry.Filter{Skills: []string{"front"}}),
			message: []string{"front.relay may not call back.sleep: the scope of the call to front.relay refuses it"}},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			tool := "front.relay"
			if c.name == "no uses" {
				tool = "plain.relay"
			}
			_, err := h.reg.InvokePermitted(ctx, tool, []byte(c.args), c.permit)
			e := registry.AsError(err)
			if e.Code != registry.CodeToolError || e.Details["tool_code"] != c.code {
				t.Fatalf("err = %v (details %v), want a tool_error whose tool_code is %s", err, e.Details, c.code)
			}
			for _, m := range c.message {
				if !strings.Contains(e.Message, m) {
					t.Errorf("message %q does not say %q", e.Message, m)
				}
			}
		})
	}

	t.Run("refusals are reported", func(t *testing.T) {
		nestedMu.Lock()
		defer nestedMu.Unlock()
		for _, n := range nested {
			if n.Caller == "front.relay" && n.Tool == "plain.echo" && n.Code == registry.CodeForbidden && n.ParentID != "" {
				return
			}
		}
		t.Errorf("OnNested did not see the undeclared call to plain.echo: %+v", nested)
	})

	t.Run("deadline", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		res, err := h.reg.Invoke(dctx, "front.relay", []byte(`{"tool":"back.env"}`))
		if err != nil {
			t.Fatal(err)
		}
		var out relayResult
		var env struct {
			DeadlineMS int64 `json:"deadline_ms"`
		}
		if err := json.Unmarshal(res.Result, &out); err != nil || json.Unmarshal(out.Result, &env) != nil {
			t.Fatalf("result %s: %v", res.Result, err)
		}
		if env.DeadlineMS <= 0 || env.DeadlineMS > 3000 {
			t.Fatalf("back.env saw %d ms left; its caller had 3000", env.DeadlineMS)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		// The caller gives up: the nested sleep ends with it, well before
		// its 20 s.
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := h.reg.Invoke(cctx, "front.relay", []byte(`{"tool":"back.sleep","args":{"ms":20000}}`))
		if registry.CodeOf(err) != registry.CodeTimeout || time.Since(start) > 10*time.Second {
			t.Fatalf("err = %v after %s, want a timeout at once", err, time.Since(start))
		}
	})
}

func filterPermit(f registry.Filter) registry.Permit {
	return func(t *registry.Tool) error {
		if !f.Match(t) {
			return registry.Errorf(registry.CodeUnknownTool, "%s is outside this endpoint's filter (%s)", t.Name, f)
		}
		return nil
	}
}

// TestNestedCallsAcrossSwaps: 8 callers call front.relay, which calls
// back.echo, while back is swapped for a new version and then front is:
// no call is lost, and the calls reach both versions of each.
func TestNestedCallsAcrossSwaps(t *testing.T) {
	h := newHarness(t, nil)
	h.installUses("front", "1.0.0", "back.echo")
	h.installUses("back", "1.0.0")
	h.start()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls atomic.Int64
	var seenMu sync.Mutex
	seen := map[string]bool{} // "front@1.0.0 back@1.1.0"
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				calls.Add(1)
				res, err := h.reg.Invoke(context.Background(), "front.relay", []byte(relayArgs("back.echo")))
				if err != nil {
					t.Errorf("call failed during a swap: %v", err)
					continue
				}
				var out relayResult
				var echo echoResult
				if err := json.Unmarshal(res.Result, &out); err != nil || json.Unmarshal(out.Result, &echo) != nil {
					t.Errorf("result %s: %v", res.Result, err)
					continue
				}
				seenMu.Lock()
				seen["front@"+out.Version+" back@"+echo.Version] = true
				seenMu.Unlock()
			}
		}()
	}
	waitSeen := func(key string) {
		t.Helper()
		if !testenv.WaitFor(10*time.Second, func() bool {
			seenMu.Lock()
			defer seenMu.Unlock()
			return seen[key]
		}) {
			t.Fatalf("no call was served by %s", key)
		}
	}
	waitSeen("front@1.0.0 back@1.0.0")
	h.installUses("back", "1.1.0") // the callee
	waitSeen("front@1.0.0 back@1.1.0")
	h.installUses("front", "1.1.0", "back.echo") // the caller
	waitSeen("front@1.1.0 back@1.1.0")
	cancel()
	wg.Wait()
	t.Logf("%d nested calls across two swaps, none failed", calls.Load())
}

// BenchmarkNestedCall measures what a nested call adds, in one run: each
// iteration calls, in turn, back.echo directly (the callee on its own),
// front.echo (the caller's own call: front serves the Host service, so its
// connection is multiplexed) and front.relay, which calls back.echo through
// the host. It reports each one's median and the nested call's added
// latency: relay minus direct, and relay minus the two calls it is made of.
func BenchmarkNestedCall(b *testing.B) {
	root := b.TempDir()
	for _, v := range []testenv.Version{
		{Skill: "front", Version: "1.0.0", Binary: testSkillBin, Env: relayEnv, Uses: []string{"back.echo"}},
		{Skill: "back", Version: "1.0.0", Binary: testSkillBin},
	} {
		if _, err := testenv.Install(root, v); err != nil {
			b.Fatal(err)
		}
	}
	l, reg := benchLoader(b, root)
	defer l.Close(context.Background())
	ctx := context.Background()
	relay := []byte(relayArgs("back.echo"))
	calls := []struct {
		tool string
		args []byte
		took []time.Duration
	}{{"back.echo", benchArgs, nil}, {"front.echo", benchArgs, nil}, {"front.relay", relay, nil}}
	for i := range calls { // warm up: the first relay dials the Host service
		if _, err := reg.Invoke(ctx, calls[i].tool, calls[i].args); err != nil {
			b.Fatal(err)
		}
		calls[i].took = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for range b.N {
		for i := range calls {
			t0 := time.Now()
			if _, err := reg.Invoke(ctx, calls[i].tool, calls[i].args); err != nil {
				b.Fatal(err)
			}
			calls[i].took = append(calls[i].took, time.Since(t0))
		}
	}
	b.StopTimer()
	direct, caller, nested := median(calls[0].took), median(calls[1].took), median(calls[2].took)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(direct), "direct-p50-us")
	b.ReportMetric(us(caller), "caller-p50-us")
	b.ReportMetric(us(nested), "nested-p50-us")
	b.ReportMetric(us(nested-direct), "added-us")
	b.ReportMetric(us(nested-direct-caller), "overhead-us")
}
