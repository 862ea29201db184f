package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/skilltest"
)

type addIn struct {
	A    float64 `json:"a" jsonschema:"description=first addend"`
	B    float64 `json:"b" jsonschema:"description=second addend"`
	Mode string  `json:"mode,omitempty" jsonschema:"enum=exact,enum=round"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

func testSkill() *sdk.Skill {
	s := sdk.New("adder", "1.0.0", "Adds numbers.")
	s.Tags = []string{"math"}
	sdk.Tool(s, "add", "Add two numbers.", func(ctx context.Context, in addIn) (addOut, error) {
		return addOut{Sum: in.A + in.B}, nil
	}, sdk.ReadOnly(), sdk.WithTags("arith"))
	sdk.Tool(s, "fail", "Always refuses.", func(ctx context.Context, in struct{}) (addOut, error) {
		return addOut{}, sdk.Retryable("busy", "try %s", "later")
	})
	sdk.Tool(s, "boom", "Panics.", func(ctx context.Context, in struct{}) (addOut, error) {
		panic("kaboom")
	})
	sdk.Tool(s, "wait", "Waits for cancellation.", func(ctx context.Context, in struct{}) (addOut, error) {
		<-ctx.Done()
		return addOut{}, ctx.Err()
	})
	return s
}

func TestDescribeSchemas(t *testing.T) {
	c := skilltest.Start(t, testSkill())
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "adder" || d.Version != "1.0.0" || len(d.Tools) != 4 {
		t.Fatalf("describe = %v", d)
	}
	add := d.Tools[0]
	if !add.Annotations.ReadOnly || !add.Annotations.Idempotent || add.Tags[0] != "arith" {
		t.Errorf("annotations/tags not carried: %v", add)
	}
	var schema struct {
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(add.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || strings.Join(schema.Required, ",") != "a,b" {
		t.Errorf("input schema = %s", add.InputSchema)
	}
	if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Errorf("struct schema must close additionalProperties: %s", add.InputSchema)
	}
	if !strings.Contains(string(schema.Properties["a"]), "first addend") || !strings.Contains(string(schema.Properties["mode"]), `"enum":["exact","round"]`) {
		t.Errorf("descriptions/enums missing: %s", add.InputSchema)
	}
}

func TestInvoke(t *testing.T) {
	c := skilltest.Start(t, testSkill())
	ctx := context.Background()
	res, err := c.Call(ctx, "add", map[string]any{"a": 2, "b": 40})
	if err != nil || string(res) != `{"sum":42}` {
		t.Fatalf("add = %s, %v", res, err)
	}
	_, err = c.Call(ctx, "fail", map[string]any{})
	var te *skilltest.ToolError
	if !errors.As(err, &te) || te.Code != "busy" || !te.Retryable || te.Message != "try later" {
		t.Fatalf("fail = %v", err)
	}
	_, err = c.Call(ctx, "boom", map[string]any{})
	if !errors.As(err, &te) || te.Code != "panic" || !strings.Contains(te.Message, "kaboom") {
		t.Fatalf("boom = %v", err)
	}
	// The skill keeps serving after a panic.
	if _, err := c.Call(ctx, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatalf("after panic: %v", err)
	}
}

func TestDeadlineReachesHandler(t *testing.T) {
	c := skilltest.Start(t, testSkill())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Call(ctx, "wait", map[string]any{})
	if err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("wait = %v after %v", err, time.Since(start))
	}
}

// TestCallsBeyondTheWorkerPool holds more calls open at once than the gRPC
// server has stream workers (GRPCServerFactory): each call waits until all
// have arrived, so the test only ends if calls beyond the pool are served
// on goroutines of their own rather than queued behind the busy workers.
func TestCallsBeyondTheWorkerPool(t *testing.T) {
	const n = 200 // the pool has max(64, 4×GOMAXPROCS) workers
	arrived := make(chan struct{}, n)
	all := make(chan struct{})
	var once sync.Once
	s := sdk.New("gather", "1.0.0", "Waits for company.")
	sdk.Tool(s, "gather", "Returns once every caller is in.", func(ctx context.Context, in struct{}) (addOut, error) {
		arrived <- struct{}{}
		if len(arrived) == n {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
			return addOut{Sum: 1}, nil
		case <-ctx.Done():
			return addOut{}, ctx.Err()
		}
	})
	c := skilltest.Start(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Call(ctx, "gather", map[string]any{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("gather with %d calls in flight: %v", n, err)
		}
	}
}

func TestManifestSkeleton(t *testing.T) {
	m := testSkill().Manifest("adder")
	if m.ManifestVersion != 1 || m.Entrypoint != "adder" || strings.Join(m.Tools, ",") != "add,boom,fail,wait" {
		t.Fatalf("skeleton = %+v", m)
	}
}

// TestAnyResult serves tools whose Out is json.RawMessage or any, whose
// schema is true (any JSON value): registering them used to panic.
func TestAnyResult(t *testing.T) {
	s := sdk.New("loose", "1.0.0", "Returns whatever it likes.")
	sdk.Tool(s, "raw", "Return JSON as is.", func(ctx context.Context, in struct{}) (json.RawMessage, error) {
		return json.RawMessage(`{"a": [1, 2]}`), nil
	})
	sdk.Tool(s, "any", "Return a number.", func(ctx context.Context, in struct{}) (any, error) {
		return 42, nil
	})
	c := skilltest.Start(t, s)
	ctx := context.Background()
	d, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range d.Tools {
		if string(tool.OutputSchema) != "true" {
			t.Errorf("%s: output schema %s, want true", tool.Name, tool.OutputSchema)
		}
	}
	if res, err := c.Call(ctx, "raw", struct{}{}); err != nil || string(res) != `{"a": [1, 2]}` {
		t.Errorf("raw = %s, %v; want the handler's bytes unchanged", res, err)
	}
	if res, err := c.Call(ctx, "any", struct{}{}); err != nil || string(res) != `42` {
		t.Errorf("any = %s, %v", res, err)
	}
}

// TestRefusedNamesPanic checks that New and Tool panic on what the host
// would refuse when it loads the skill, so the skill's own test finds it.
func TestRefusedNamesPanic(t *testing.T) {
	handler := func(ctx context.Context, in struct{}) (addOut, error) { return addOut{}, nil }
	panicOf := func(f func()) (msg string) {
		defer func() {
			if p := recover(); p != nil {
				msg = fmt.Sprint(p)
			}
		}()
		f()
		return ""
	}
	long := strings.Repeat("x", 30)
	for _, c := range []struct {
		name string
		f    func()
		want string // "" for no panic
	}{
		{"valid", func() {
			s := sdk.New("a-b_c2", "1.2.3-rc.1+build.5", "Fine.")
			sdk.Tool(s, "do_it", "Does it.", handler)
			sdk.Tool(s, strings.Repeat("t", 64-len("a-b_c2__")), "Fits in 64.", handler)
		}, ""},
		{"skill name", func() { sdk.New("Bad__Name", "1.0.0", "d") }, `sdk: skill name "Bad__Name" must match`},
		{"skill name too long", func() { sdk.New(strings.Repeat("s", 33), "1.0.0", "d") }, "at most 32 characters"},
		{"version", func() { sdk.New("ok", "v1.0", "d") }, `skill ok: version "v1.0" is not a semantic version`},
		{"leading zero", func() { sdk.New("ok", "1.02.0", "d") }, `version "1.02.0"`},
		{"numeric prerelease with a leading zero", func() { sdk.New("ok", "1.0.0-01", "d") }, `version "1.0.0-01"`},
		{"skill description", func() { sdk.New("ok", "1.0.0", " \n") }, "skill ok: the description is empty"},
		{"tool name", func() { sdk.Tool(sdk.New("ok", "1.0.0", "d"), "Bad__Name", "d", handler) }, `sdk: tool name "Bad__Name" must match`},
		{"tool name too long", func() { sdk.Tool(sdk.New(long, "1.0.0", "d"), long+"yyy", "d", handler) }, "has more than 64 characters"},
		{"tool description", func() { sdk.Tool(sdk.New("ok", "1.0.0", "d"), "t", "\t", handler) }, `sdk: tool "t": the description is empty`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := panicOf(c.f)
			if c.want == "" && got != "" || !strings.Contains(got, c.want) {
				t.Errorf("panic %q, want one containing %q", got, c.want)
			}
		})
	}
}
