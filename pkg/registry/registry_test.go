package registry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memBackend is an in-memory Backend for the registry's own unit tests; the
// loader's tests drive real skill processes.
type memBackend struct {
	version  string
	draining atomic.Bool
	inflight atomic.Int64
	calls    atomic.Int64
	fn       func(ctx context.Context, tool string, args []byte) ([]byte, error)
}

func (b *memBackend) Acquire() bool {
	if b.draining.Load() {
		return false
	}
	b.inflight.Add(1)
	return true
}
func (b *memBackend) Release() { b.inflight.Add(-1) }
func (b *memBackend) Invoke(ctx context.Context, tool string, args []byte, max int64) ([]byte, error) {
	b.calls.Add(1)
	if b.fn != nil {
		return b.fn(ctx, tool, args)
	}
	return json.Marshal(map[string]string{"version": b.version, "tool": tool})
}

const objSchema = `{"type":"object","properties":{"n":{"type":"integer","minimum":0},"s":{"type":"string"}},"required":["n"],"additionalProperties":false}`

func spec(name, version string, b Backend, tools ...string) SkillSpec {
	s := SkillSpec{Name: name, Version: version, Description: name + " skill", Backend: b, Tags: []string{"t-" + name}}
	for _, t := range tools {
		s.Tools = append(s.Tools, ToolSpec{Name: t, Description: "does " + t, InputSchema: json.RawMessage(objSchema)})
	}
	return s
}

func TestPutLookupInvoke(t *testing.T) {
	r := New(Config{})
	b := &memBackend{version: "1.0.0"}
	if _, err := r.Put(spec("calc", "1.0.0", b, "add", "sub")); err != nil {
		t.Fatal(err)
	}
	snap := r.Snapshot()
	for _, name := range []string{"calc.add", "calc__add"} {
		if tool, ok := snap.Tool(name); !ok || tool.Name != "calc.add" || tool.LLMName != "calc__add" {
			t.Errorf("lookup %s = %v %v", name, tool, ok)
		}
	}
	res, err := r.Invoke(context.Background(), "calc__sub", []byte(`{"n":1}`))
	if err != nil || !strings.Contains(string(res.Result), `"tool":"sub"`) || res.Version != "1.0.0" {
		t.Fatalf("invoke = %+v, %v", res, err)
	}
}

func TestInvokeErrors(t *testing.T) {
	r := New(Config{})
	b := &memBackend{}
	sp := spec("calc", "1.0.0", b, "add")
	sp.Limits = Limits{MaxRequestBytes: 64, MaxResponseBytes: 10, Timeout: 50 * time.Millisecond, MaxConcurrency: 1}
	if _, err := r.Put(sp); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name, tool, args string
		fn               func(ctx context.Context, tool string, args []byte) ([]byte, error)
		want             Code
		contains         string
	}{
		{"unknown", "calc.nope", `{}`, nil, CodeUnknownTool, "no such tool"},
		{"unknown skill", "zzz.add", `{}`, nil, CodeUnknownTool, "no skill named zzz"},
		{"bad json", "calc.add", `{"n":`, nil, CodeInvalidArguments, "not valid JSON"},
		{"not object", "calc.add", `[1]`, nil, CodeInvalidArguments, "must be a JSON object"},
		{"schema", "calc.add", `{"n":-1,"x":2}`, nil, CodeInvalidArguments, "/n"},
		{"missing", "calc.add", `{}`, nil, CodeInvalidArguments, "missing properties"},
		{"too large", "calc.add", `{"n":1,"s":"` + strings.Repeat("x", 100) + `"}`, nil, CodeRequestTooLarge, "over the skill's limit"},
		{"deep", "calc.add", strings.Repeat("[", 100) + strings.Repeat("]", 100), nil, CodeRequestTooLarge, ""},
		{"resp too large", "calc.add", `{"n":1}`, func(context.Context, string, []byte) ([]byte, error) {
			return []byte(`"` + strings.Repeat("y", 20) + `"`), nil
		}, CodeResponseTooLarge, "over the skill's limit of 10"},
		{"invalid resp", "calc.add", `{"n":1}`, func(context.Context, string, []byte) ([]byte, error) { return []byte(`{x`), nil }, CodeInvalidResponse, "not valid JSON"},
		{"timeout", "calc.add", `{"n":1}`, func(ctx context.Context, _ string, _ []byte) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, CodeTimeout, "timeout of 50ms"},
		{"tool error", "calc.add", `{"n":1}`, func(context.Context, string, []byte) ([]byte, error) {
			return nil, Errorf(CodeToolError, "nope")
		}, CodeToolError, "nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.fn = c.fn
			_, err := r.Invoke(ctx, c.tool, []byte(c.args))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if c.name == "deep" {
				if e.Code != CodeRequestTooLarge && e.Code != CodeInvalidArguments {
					t.Fatalf("deep: %v", e)
				}
				return
			}
			if e.Code != c.want || !strings.Contains(e.Message, c.contains) {
				t.Fatalf("got %v, want %s containing %q", e, c.want, c.contains)
			}
		})
	}
}

func TestDeepArgumentsRefused(t *testing.T) {
	r := New(Config{})
	if _, err := r.Put(spec("calc", "1.0.0", &memBackend{}, "add")); err != nil {
		t.Fatal(err)
	}
	_, err := r.Invoke(context.Background(), "calc.add", []byte(strings.Repeat("[", 100)+strings.Repeat("]", 100)))
	if CodeOf(err) != CodeInvalidArguments || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("err = %v", err)
	}
}

func TestOverloaded(t *testing.T) {
	r := New(Config{})
	release := make(chan struct{})
	b := &memBackend{fn: func(ctx context.Context, _ string, _ []byte) ([]byte, error) {
		<-release
		return []byte(`1`), nil
	}}
	sp := spec("calc", "1.0.0", b, "add")
	sp.Limits.MaxConcurrency = 1
	r.Put(sp)
	done := make(chan error)
	go func() { _, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`)); done <- err }()
	for b.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	_, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`))
	if CodeOf(err) != CodeOverloaded {
		t.Fatalf("err = %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestInvalidToolsRefused(t *testing.T) {
	r := New(Config{})
	sp := SkillSpec{Name: "bad", Version: "1.0.0", Backend: &memBackend{}, Tools: []ToolSpec{
		{Name: "Upper", Description: "x", InputSchema: json.RawMessage(objSchema)},
		{Name: "nodesc", InputSchema: json.RawMessage(objSchema)},
		{Name: "notobj", Description: "x", InputSchema: json.RawMessage(`{"type":"string"}`)},
		{Name: "badschema", Description: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":12}}}`)},
		{Name: "fileref", Description: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)},
		{Name: "httpref", Description: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"http://127.0.0.1:1/x.json"}}}`)},
	}}
	_, err := r.Put(sp)
	if CodeOf(err) != CodeInvalidTool {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`"Upper"`, "description is empty", `"type": "object"`, `"badschema"`, `external references are not allowed`, `http://127.0.0.1:1/x.json`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if r.Snapshot().Len() != 0 {
		t.Fatal("invalid spec was published")
	}
}

// A swap under load: callers keep calling while versions are swapped and
// the old backend is drained; no call may fail.
func TestSwapUnderLoadLosesNoCall(t *testing.T) {
	r := New(Config{})
	cur := &memBackend{version: "1"}
	r.Put(spec("calc", "1", cur, "add"))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var fails, calls atomic.Int64
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				calls.Add(1)
				if _, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`)); err != nil {
					fails.Add(1)
					t.Errorf("call failed: %v", err)
				}
			}
		}()
	}
	for v := 2; v < 50; v++ {
		next := &memBackend{version: string(rune('0' + v))}
		old, err := r.Put(spec("calc", next.version, next, "add"))
		if err != nil {
			t.Fatal(err)
		}
		old.(*memBackend).draining.Store(true)
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if fails.Load() != 0 || calls.Load() == 0 {
		t.Fatalf("%d of %d calls failed", fails.Load(), calls.Load())
	}
}

func TestRemoveAndUnavailable(t *testing.T) {
	var changes []Change
	r := New(Config{OnChange: func(c Change) { changes = append(changes, c) }})
	b := &memBackend{}
	r.Put(spec("calc", "1.0.0", b, "add"))
	r.SetAvailable("calc", b, false, "crashed")
	_, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`))
	if e := AsError(err); e.Code != CodeSkillUnavailable || !e.Retryable {
		t.Fatalf("err = %v", err)
	}
	if hits := r.Snapshot().Search(Query{Text: "add"}); len(hits) != 0 {
		t.Fatalf("unavailable tool offered: %v", hits)
	}
	r.SetAvailable("calc", b, true, "restarted")
	if hits := r.Snapshot().Search(Query{Text: "add"}); len(hits) != 1 {
		t.Fatalf("available tool not offered: %v", hits)
	}
	if old := r.Remove("calc", "disabled by an operator"); old != b {
		t.Fatal("remove returned the wrong backend")
	}
	_, err = r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`))
	if CodeOf(err) != CodeUnknownTool || !strings.Contains(err.Error(), "disabled by an operator") {
		t.Fatalf("err = %v", err)
	}
	kinds := []string{}
	for _, c := range changes {
		kinds = append(kinds, c.Kind)
	}
	if strings.Join(kinds, ",") != "put,unavailable,available,remove" {
		t.Fatalf("changes = %v", kinds)
	}
}

func TestSnapshotStaysSorted(t *testing.T) {
	r := New(Config{})
	names := []string{"m", "a", "z", "c", "mm", "b"}
	for i, n := range names {
		r.Put(spec(n, "1.0.0", &memBackend{}, "x", "y"+n))
		if i%2 == 1 {
			r.Remove(names[i-1], "gone")
			r.Put(spec(names[i-1], "2.0.0", &memBackend{}, "q", "a"))
		}
	}
	r.Remove("z", "gone")
	tools := r.Snapshot().Tools()
	if len(tools) != 10 {
		t.Fatalf("%d tools", len(tools))
	}
	for i := 1; i < len(tools); i++ {
		if tools[i-1].Name >= tools[i].Name {
			t.Fatalf("not sorted at %d: %s >= %s", i, tools[i-1].Name, tools[i].Name)
		}
	}
}

// jsonschema v5 panics validating 1e1000010 as an integer; the call must
// get invalid_arguments, and the process must live.
func TestHugeExponentIsInvalidNotAPanic(t *testing.T) {
	r := New(Config{})
	r.Put(spec("calc", "1.0.0", &memBackend{}, "add"))
	_, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1e1000010}`))
	if CodeOf(err) != CodeInvalidArguments {
		t.Fatalf("err = %v", err)
	}
}

// TestResultsFollowTheOutputSchema checks that a tool declaring an output
// schema answers only results that conform to it (MCP clients check
// structuredContent against it), for schemas the fast validator handles and
// for those only jsonschema does, and that a tool without one passes any
// JSON through.
func TestResultsFollowTheOutputSchema(t *testing.T) {
	r := New(Config{})
	var result atomic.Value
	b := &memBackend{fn: func(context.Context, string, []byte) ([]byte, error) { return []byte(result.Load().(string)), nil }}
	sp := spec("out", "1.0.0", b, "plain", "fast", "full")
	sp.Tools[1].OutputSchema = json.RawMessage(`{"type":"object","properties":{"total":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}},"required":["total"]}`)
	sp.Tools[2].OutputSchema = json.RawMessage(`{"type":"object","properties":{"total":{"$ref":"#/$defs/count"}},"required":["total"],"$defs":{"count":{"type":"integer","minimum":0}}}`)
	if _, err := r.Put(sp); err != nil {
		t.Fatal(err)
	}
	if tl, _ := r.Snapshot().Tool("out.fast"); tl.outFast == nil {
		t.Fatal("the fast validator should take the plain output schema")
	}
	if tl, _ := r.Snapshot().Tool("out.full"); tl.outFast != nil {
		t.Fatal("the fast validator should refuse a schema with $ref")
	}
	cases := []struct {
		tool, result string
		ok           bool
		contains     string
	}{
		{"out.plain", `"anything"`, true, ""},
		{"out.fast", `{"total":2,"items":["a","b"]}`, true, ""},
		{"out.fast", `{"total":"2"}`, false, "/total"},
		{"out.fast", `{"items":[1]}`, false, "missing properties: 'total'"},
		{"out.fast", `[1,2]`, false, "(the result)"},
		{"out.full", `{"total":3}`, true, ""},
		{"out.full", `{"total":-1}`, false, "/total"},
		{"out.full", `{"total":`, false, "not valid JSON"},
	}
	for _, c := range cases {
		result.Store(c.result)
		res, err := r.Invoke(context.Background(), c.tool, []byte(`{"n":1}`))
		if c.ok {
			if err != nil || string(res.Result) != c.result {
				t.Errorf("%s -> %s: got %v, %v", c.tool, c.result, res, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidResponse || !strings.Contains(e.Message, c.contains) {
			t.Errorf("%s -> %s: got %v, want invalid_response saying %q", c.tool, c.result, err, c.contains)
		}
	}
}

// swapOnAcquire refuses its first lease after publishing its successor, as a
// draining instance does when a swap lands between lookup and lease.
type swapOnAcquire struct {
	memBackend
	once sync.Once
	swap func()
}

func (b *swapOnAcquire) Acquire() bool {
	refused := false
	b.once.Do(func() { b.swap(); refused = true })
	return !refused && b.memBackend.Acquire()
}

func TestPermitIsCheckedOnTheSnapshotTheCallRunsOn(t *testing.T) {
	r := New(Config{})
	readOnly := func(tl *Tool) error {
		if !tl.Annotations.ReadOnly {
			return Errorf(CodeForbidden, "%s@%s is not read-only", tl.Name, tl.Version)
		}
		return nil
	}
	next := &memBackend{version: "2"}
	v2 := spec("db", "2", next, "query") // 2 drops the read-only hint
	first := &swapOnAcquire{memBackend: memBackend{version: "1"}, swap: func() { r.Put(v2) }}
	v1 := spec("db", "1", first, "query")
	v1.Tools[0].Annotations.ReadOnly = true
	if _, err := r.Put(v1); err != nil {
		t.Fatal(err)
	}
	// The call looks up 1 (read-only, permitted), its lease is refused by the
	// swap to 2, and it follows to 2, which the permit must refuse.
	_, err := r.InvokePermitted(context.Background(), "db.query", []byte(`{"n":1}`), readOnly)
	if CodeOf(err) != CodeForbidden || next.calls.Load() != 0 || first.calls.Load() != 0 {
		t.Fatalf("err = %v; calls on 1: %d, on 2: %d", err, first.calls.Load(), next.calls.Load())
	}
	// Permitted calls go through, and a nil permit allows everything.
	v3 := spec("db", "3", &memBackend{version: "3"}, "query")
	v3.Tools[0].Annotations.ReadOnly = true
	r.Put(v3)
	if res, err := r.InvokePermitted(context.Background(), "db.query", []byte(`{"n":1}`), readOnly); err != nil || res.Version != "3" {
		t.Fatalf("permitted call = %+v, %v", res, err)
	}
	if _, err := r.InvokePermitted(context.Background(), "db.query", []byte(`{"n":1}`), nil); err != nil {
		t.Fatal(err)
	}
}

// OnCall names a tool one way whichever name the caller used and whether
// the call failed, so its metrics are one series; a name that is no tool
// is passed on as given, for the hook to fold.
func TestOnCallNamesToolOneWay(t *testing.T) {
	type call struct {
		tool string
		code Code
	}
	var mu sync.Mutex
	var got []call
	r := New(Config{OnCall: func(tool string, code Code, _ time.Duration) {
		mu.Lock()
		got = append(got, call{tool, code})
		mu.Unlock()
	}})
	if _, err := r.Put(spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, "add")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.Invoke(ctx, "calc__add", []byte(`{"n":1}`))
	r.Invoke(ctx, "calc__add", []byte(`{"n":"one"}`))
	r.Invoke(ctx, "calc.add", []byte(`{"n":"one"}`))
	r.Invoke(ctx, "calc__nope", []byte(`{}`))
	want := []call{{"calc.add", ""}, {"calc.add", CodeInvalidArguments}, {"calc.add", CodeInvalidArguments}, {"calc.nope", CodeUnknownTool}}
	if !slices.Equal(got, want) {
		t.Fatalf("OnCall saw %v, want %v", got, want)
	}
}

// TestPutReusesUnchangedSchemas: a new version whose tool schema is the same
// bytes takes the serving version's compiled schema; a changed schema is
// compiled afresh and checked, so a bad one is still refused.
func TestPutReusesUnchangedSchemas(t *testing.T) {
	r := New(Config{})
	if _, err := r.Put(spec("calc", "1.0.0", &memBackend{version: "1.0.0"}, "add", "sub")); err != nil {
		t.Fatal(err)
	}
	v1add, _ := r.Snapshot().Tool("calc.add")
	v1sub, _ := r.Snapshot().Tool("calc.sub")

	next := spec("calc", "1.1.0", &memBackend{version: "1.1.0"}, "add", "sub")
	next.Tools[0].Description = "adds, described anew"
	next.Tools[1].InputSchema = json.RawMessage(`{"type":"object","properties":{"m":{"type":"string"}},"required":["m"]}`)
	if _, err := r.Put(next); err != nil {
		t.Fatal(err)
	}
	v2add, _ := r.Snapshot().Tool("calc.add")
	v2sub, _ := r.Snapshot().Tool("calc.sub")
	if v2add.schema != v1add.schema || v2add.fast != v1add.fast {
		t.Error("an unchanged input schema was compiled again")
	}
	if v2sub.schema == v1sub.schema {
		t.Error("a changed input schema kept the old compiled one")
	}
	if _, err := r.Invoke(context.Background(), "calc.sub", []byte(`{"n":1}`)); AsError(err).Code != CodeInvalidArguments {
		t.Errorf("the new schema does not judge the call: %v", err)
	}
	if _, err := r.Invoke(context.Background(), "calc.add", []byte(`{"n":1}`)); err != nil {
		t.Errorf("the reused schema refused a good call: %v", err)
	}

	bad := spec("calc", "1.2.0", &memBackend{version: "1.2.0"}, "add", "sub")
	bad.Tools[1].InputSchema = json.RawMessage(`{"type":"array"}`)
	if _, err := r.Put(bad); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("a changed, invalid schema was accepted: %v", err)
	}
}
