package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/sdk"
)

// clauseFive is the travel expense policy's lodging clause as the policy
// skill returns it.
const clauseFive = "住宿费按出差城市分级执行，每人每晚报销上限为：一线城市（北京、上海、广州、深圳）600 元；省会城市及计划单列市 450 元；其他城市 350 元。总监及以上人员标准上浮 30%。"

// fakeHost answers policyassist's two calls as the policy and calc skills
// would, and records what was asked.
func fakeHost(t *testing.T, calls *[]string) context.Context {
	return sdk.WithCaller(context.Background(), func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		*calls = append(*calls, tool+" "+string(args))
		switch tool {
		case searchTool:
			return json.Marshal(searchOut{Results: []clause{
				{Citation: "《差旅报销制度》第四条", Text: "城市间交通：部门经理及以下员工乘坐火车。"},
				{Citation: "《差旅报销制度》第五条", Text: clauseFive},
			}})
		case calcTool:
			var in struct{ Expression string }
			_ = json.Unmarshal(args, &in)
			// The three expressions the cases below make.
			res := map[string]float64{"600 * (1 + 30 / 100) * 3": 2340, "450 * (1 + 0 / 100) * 2": 900, "350 * (1 + 0 / 100) * 1": 350}
			v, ok := res[in.Expression]
			if !ok {
				t.Errorf("unexpected expression %q", in.Expression)
			}
			return json.Marshal(evalOut{Result: v})
		}
		return nil, &sdk.CallError{Tool: tool, Code: "forbidden", Message: "not in uses"}
	})
}

func TestLodging(t *testing.T) {
	cases := []struct {
		in     lodgingIn
		amount float64
		tier   string
	}{
		{lodgingIn{City: "Shanghai", Nights: 3, Grade: "director"}, 2340, "一线城市"},
		{lodgingIn{City: "杭州市", Nights: 2, Grade: "staff"}, 900, "省会城市及计划单列市"},
		{lodgingIn{City: "洛阳", Nights: 1, Grade: "manager"}, 350, "其他城市"},
	}
	for _, c := range cases {
		var calls []string
		out, err := lodging(fakeHost(t, &calls), c.in)
		if err != nil {
			t.Fatalf("%+v: %v", c.in, err)
		}
		if out.Amount != c.amount || out.CityTier != c.tier || out.Citation != "《差旅报销制度》第五条" || !strings.Contains(out.Answer, out.Citation) {
			t.Errorf("%+v = %+v", c.in, out)
		}
		if len(calls) != 2 || !strings.HasPrefix(calls[0], searchTool) || !strings.HasPrefix(calls[1], calcTool) {
			t.Errorf("%+v called %v; want the policy search, then calc", c.in, calls)
		}
	}
}

func TestLodgingPassesRefusalsOn(t *testing.T) {
	ctx := sdk.WithCaller(context.Background(), func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		return nil, &sdk.CallError{Tool: tool, Code: "forbidden", Message: "the caller's filter refuses it"}
	})
	_, err := lodging(ctx, lodgingIn{City: "上海", Nights: 1, Grade: "staff"})
	if !sdk.IsCode(err, "forbidden") || !strings.Contains(err.Error(), "looking up the lodging rule") {
		t.Fatalf("err = %v, want the host's forbidden, said where", err)
	}
}

func TestParseRule(t *testing.T) {
	r, ok := parseRule(clauseFive)
	if !ok || r.uplift != 30 || len(r.tiers) != 3 || r.tiers[0].cap != 600 || !slices.Equal(r.tiers[0].cities, []string{"北京", "上海", "广州", "深圳"}) ||
		r.tiers[1].name != "省会城市及计划单列市" || r.tiers[2].cap != 350 {
		t.Fatalf("parseRule = %+v, %v", r, ok)
	}
	if _, ok := parseRule("伙食补助：一线城市每人每天 120 元。"); ok {
		t.Error("a clause about meals read as the lodging rule")
	}
}

// TestWithPolicyAndCalc runs policyassist against the real policy and calc
// example skills, each its own process under a loader, as the host runs
// them: the question of the issue, answered with the figure and the
// citation, through two nested calls.
func TestWithPolicyAndCalc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three skill processes")
	}
	dir := t.TempDir()
	bins := map[string]string{}
	for _, name := range []string{"policy", "calc", "policyassist"} {
		bin, err := testenv.Build(dir, "./examples/skills/"+name)
		if err != nil {
			t.Fatal(err)
		}
		bins[name] = bin
	}
	// policyassist's uses as its binary prints it for the build script.
	skeleton, err := exec.Command(bins["policyassist"], "--manifest").Output()
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Uses []string }
	if err := json.Unmarshal(skeleton, &m); err != nil || !slices.Equal(m.Uses, []string{calcTool, searchTool}) {
		t.Fatalf("--manifest uses = %v (%v)", m.Uses, err)
	}
	root := t.TempDir()
	for name, bin := range bins {
		v := testenv.Version{Skill: name, Version: "1.0.0", Binary: bin}
		if name == "policyassist" {
			v.Uses = m.Uses
		}
		if _, err := testenv.Install(root, v); err != nil {
			t.Fatal(err)
		}
	}
	var nestedMu sync.Mutex
	var nested []registry.NestedCall
	reg := registry.New(registry.Config{OnNested: func(n registry.NestedCall) {
		nestedMu.Lock()
		nested = append(nested, n)
		nestedMu.Unlock()
	}})
	l, err := loader.New(loader.Config{
		Skills: root, Registry: reg, StartTimeout: 20 * time.Second, Resync: time.Hour,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := reg.Invoke(context.Background(), "policyassist.lodging_allowance", []byte(`{"city":"Shanghai","nights":3,"grade":"director"}`))
	if err != nil {
		t.Fatal(err)
	}
	var out lodgingOut
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if out.Amount != 2340 || out.PerNight != 780 || out.Citation != "《差旅报销制度》第五条" || !strings.Contains(out.Clause, "上浮 30%") {
		t.Fatalf("a director, 3 nights in Shanghai: %s", res.Result)
	}
	t.Log(out.Answer)
	var tools []string
	nestedMu.Lock()
	defer nestedMu.Unlock()
	for _, n := range nested {
		tools = append(tools, fmt.Sprintf("%s→%s %q", n.Caller, n.Tool, n.Code))
	}
	if want := []string{`policyassist.lodging_allowance→policy.search_policies ""`, `policyassist.lodging_allowance→calc.evaluate ""`}; !slices.Equal(tools, want) {
		t.Errorf("nested calls %v, want %v", tools, want)
	}
}
