package flow

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// graphFlow builds a flow whose edges from "a" carry the given conditions
// in order, to b, c, d, … .
func graphFlow(t *testing.T, selector bool, whens ...string) *Flow {
	t.Helper()
	doc := "participants:\n  - {name: a, profile: admin}\n"
	edges := ""
	for i, w := range whens {
		to := string(rune('b' + i))
		doc += "  - {name: " + to + ", profile: coder}\n"
		if w == "otherwise" {
			edges += "    - {from: a, to: " + to + ", otherwise: true}\n"
		} else {
			edges += "    - {from: a, to: " + to + ", when: '" + w + "'}\n"
		}
	}
	doc += "selection:\n  mode: graph\n"
	if selector {
		doc += "  selector: {profile: admin}\n"
	}
	return mustParse(t, doc+"  edges:\n"+edges)
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		when  string
		state State
		want  bool
	}{
		{`text.contains("TERMINATE")`, State{Text: "done. TERMINATE"}, true},
		{`text.lowerAscii().startsWith("lgtm")`, State{Text: "LGTM, ship it"}, true},
		{`sender == "a" && round >= 3`, State{Round: 3}, true},
		{`sender == "a" && round >= 3`, State{Round: 2}, false},
		{`result.ok`, State{Result: map[string]any{"ok": true}}, true},
		{`result.ok == false && result.error.code == "timeout"`, State{Result: map[string]any{"ok": false, "error": map[string]any{"code": "timeout"}}}, true},
		{`result.?approved.orValue(false)`, State{}, false},
		{`has(result.approved) && result.approved`, State{Result: map[string]any{"approved": true}}, true},
		{`result.score > 0.5`, State{Result: map[string]any{"score": 0.75}}, true},
		{`size(result.items) == 2`, State{Result: map[string]any{"items": []any{1.0, "x"}}}, true},
		{`"coder" in last_by && last_by.coder.contains("js")`, State{LastBy: map[string]string{"coder": "```js"}}, true},
	} {
		f := graphFlow(t, false, tc.when, "otherwise")
		tc.state.Sender = "a"
		got, err := f.NextCandidates(tc.state)
		if err != nil {
			t.Errorf("%s on %+v: %v", tc.when, tc.state, err)
			continue
		}
		want := "c"
		if tc.want {
			want = "b"
		}
		if got[0] != want {
			t.Errorf("%s on %+v took the edge to %s; want the condition %v", tc.when, tc.state, got[0], tc.want)
		}
	}
}

func TestConditionErrors(t *testing.T) {
	long := strings.Repeat("word ", 200_000)
	hundred := "[" + strings.TrimSuffix(strings.Repeat("0,", 100), ",") + "]"
	for _, tc := range []struct {
		when  string
		state State
		want  string
	}{
		// A missing key is an error, never read as false.
		{"result.ok", State{}, `edge a → b when "result.ok": no such key: ok`},
		{"result.ok", State{Result: map[string]any{"ok": "yes"}}, "evaluated to yes of type string, not a bool"},
		// Few steps of costly work: the cost limit ends it (a contains over
		// a megabyte costs about 100 000).
		{strings.ReplaceAll("L.all(i, !text.contains(\"zzz\"))", "L", hundred), State{Text: long}, "actual cost limit exceeded"},
		// Few steps of slow work: the deadline ends it.
		{`text.split(" ").all(w, w.size() > 0)`, State{Text: long}, "operation interrupted"},
	} {
		f := graphFlow(t, false, tc.when)
		tc.state.Sender = "a"
		_, err := f.NextCandidates(tc.state)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want it to contain %q", tc.when, err, tc.want)
		}
	}
}

func TestNextCandidates(t *testing.T) {
	// Pure workflow mode needs exactly one holding edge.
	f := graphFlow(t, false, "true", "round > 1", "otherwise")
	if got, err := f.NextCandidates(State{Sender: "a", Round: 1}); err != nil || !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("one edge holds: %v, %v", got, err)
	}
	_, err := f.NextCandidates(State{Sender: "a", Round: 2})
	if !errors.Is(err, ErrAmbiguousNextHop) || !strings.Contains(err.Error(), "after a in round 2 the edges to b, c all hold") {
		t.Errorf("two edges hold in pure workflow mode: %v", err)
	}
	// With a selector they are candidates for it.
	f = graphFlow(t, true, "true", "round > 1")
	if got, err := f.NextCandidates(State{Sender: "a", Round: 2}); err != nil || !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("two edges hold with a selector: %v, %v", got, err)
	}
	if _, err := f.NextCandidates(State{Sender: "a", Round: 1, Text: "x"}); err != nil {
		t.Errorf("one edge holds with a selector: %v", err)
	}
	f = graphFlow(t, false, "false")
	if _, err := f.NextCandidates(State{Sender: "a"}); !errors.Is(err, ErrNoNextHop) || !strings.Contains(err.Error(), "after a in round 0 no edge holds") {
		t.Errorf("no edge holds: %v", err)
	}
	if _, err := f.NextCandidates(State{Sender: "b"}); !errors.Is(err, ErrNoNextHop) {
		t.Errorf("a node without edges: %v", err)
	}
	if _, err := f.NextCandidates(State{Sender: "zed"}); err == nil || !strings.Contains(err.Error(), `the last speaker "zed" is not a participant`) {
		t.Errorf("an unknown speaker: %v", err)
	}
	if got, _ := f.NextCandidates(State{}); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("before the first turn: %v", got)
	}

	rr := mustParse(t, "participants: [{name: a, profile: admin}, {name: b, profile: coder}, {name: c, human: true}]")
	for sender, want := range map[string]string{"a": "b", "b": "c", "c": "a"} {
		if got, err := rr.NextCandidates(State{Sender: sender, Round: 1}); err != nil || got[0] != want {
			t.Errorf("round robin after %s = %v, %v; want %s", sender, got, err, want)
		}
	}
	sel := mustParse(t, "participants: [{name: a, profile: admin}, {name: b, profile: coder}, {name: c, profile: coder}]\nselection: {mode: selector, selector: {profile: admin, allow_repeat_speaker: false}}")
	if got, _ := sel.NextCandidates(State{Sender: "b", Round: 1}); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("selector without repeats after b = %v", got)
	}
}

func TestToolArguments(t *testing.T) {
	f := mustParse(t, `
participants:
  - {name: a, profile: admin}
  - name: r
    tool: skill.tool
    arguments:
      code: 'last_by.a'
      count: 'round * 2'
      opts: '{"lines": text.split("\n"), "strict": true}'
      bad: 'result.missing'
`)
	_, err := f.ToolArguments("r", State{Round: 2, Text: "x\ny", LastBy: map[string]string{"a": "1+1"}})
	if err == nil || !strings.Contains(err.Error(), `r argument bad = "result.missing": no such key: missing`) {
		t.Errorf("a failing mapping: %v", err)
	}
	delete(f.byName["r"].args, "bad")
	args, err := f.ToolArguments("r", State{Round: 2, Text: "x\ny", LastBy: map[string]string{"a": "1+1"}})
	want := map[string]any{"code": "1+1", "count": float64(4), "opts": map[string]any{"lines": []any{"x", "y"}, "strict": true}}
	if err != nil || !reflect.DeepEqual(args, want) {
		t.Errorf("ToolArguments = %v, %v; want %v", args, err, want)
	}
	if _, err := f.ToolArguments("a", State{}); err == nil || !strings.Contains(err.Error(), `"a" is not a tool agent`) {
		t.Errorf("ToolArguments of an agent: %v", err)
	}
}

func TestShouldStop(t *testing.T) {
	f := mustParse(t, `
participants: [{name: a, profile: admin}, {name: h, human: true}]
termination:
  any:
    - text_mention: TERMINATE
    - all: [{token_budget: 100}, {time_limit: 1m}]
    - terminate_tool: true
    - handoff_to_human: true
    - max_rounds: 5
`)
	for _, tc := range []struct {
		s    State
		want string
	}{
		{State{Round: 1, Text: "going on"}, ""},
		{State{Round: 1, Text: "TERMINATE"}, ReasonTextMention},
		{State{Round: 1, Tokens: 150}, ""},
		{State{Round: 1, Tokens: 150, Elapsed: time.Minute}, "token_budget+time_limit"},
		{State{Round: 1, TerminateCalled: true}, ReasonTerminateTool},
		{State{Round: 1, Next: "h"}, ReasonHandoffToHuman},
		{State{Round: 1, Next: "a"}, ""},
		{State{Round: 5}, ReasonMaxRounds},
	} {
		r, stop := f.ShouldStop(tc.s)
		if r != tc.want || stop != (tc.want != "") {
			t.Errorf("ShouldStop(%+v) = %q, %v; want %q", tc.s, r, stop, tc.want)
		}
	}
	if r, stop := mustParse(t, base).ShouldStop(State{Round: DefaultMaxRounds}); !stop || r != ReasonMaxRounds {
		t.Errorf("the default cap: %q, %v", r, stop)
	}
}

func TestContextSelect(t *testing.T) {
	senders := []string{"admin", "coder", "reviewer", "coder", "runner", "coder"}
	for _, tc := range []struct {
		p    ContextPolicy
		want []int
	}{
		{ContextPolicy{Keep: KeepAll}, []int{0, 1, 2, 3, 4, 5}},
		{ContextPolicy{Keep: KeepLastN, Last: 2}, []int{4, 5}},
		{ContextPolicy{Keep: KeepLastN, Last: 10}, []int{0, 1, 2, 3, 4, 5}},
		{ContextPolicy{Keep: KeepSenders, Senders: []string{"admin", "runner"}}, []int{0, 4}},
		{ContextPolicy{Keep: KeepSenders, Senders: []string{"coder"}, Last: 2}, []int{3, 5}},
		{ContextPolicy{Keep: KeepClear}, []int{5}},
	} {
		if got := tc.p.Select(senders); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v.Select = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := (ContextPolicy{Keep: KeepClear}).Select(nil); len(got) != 0 {
		t.Errorf("clear of nothing = %v", got)
	}
}

// FuzzParse: no document crashes the loader, and whatever it accepts can
// be asked for its next speaker.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base), true)
	f.Add([]byte(`{"participants":[{"name":"a","profile":"admin"}],"termination":{"any":[{"max_rounds":2}]}}`), false)
	f.Add([]byte("participants: [{name: a, human: true}]\nstall: {action: human}"), true)
	f.Add([]byte("participants: [{name: r, tool: s.t, arguments: {x: 'result.?y.orValue(1)'}}]"), true)
	f.Add([]byte(`{"participants":[{"name":"a","profile":"admin","reply":{"function":"f","parameters":{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}},"$defs":{"y":{"type":"string"}}}}}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, isYAML bool) {
		format := "json"
		if isYAML {
			format = "yaml"
		}
		fl, err := Parse("fuzz", data, format, testProfiles)
		if err != nil {
			return
		}
		for _, p := range fl.Participants {
			if _, err := fl.NextCandidates(State{Sender: p.Name, Round: 1, Result: map[string]any{"ok": true}}); err != nil &&
				!errors.Is(err, ErrNoNextHop) && !errors.Is(err, ErrAmbiguousNextHop) && !strings.Contains(err.Error(), "when") {
				t.Errorf("NextCandidates after %s: %v", p.Name, err)
			}
			if p.Kind() == KindTool {
				_, _ = fl.ToolArguments(p.Name, State{})
			}
			if p.Reply != nil {
				_ = p.Reply.Validate([]byte(`{"x": "y"}`))
			}
		}
		_, _ = fl.ShouldStop(State{Round: 1})
	})
}

func TestStallGuard(t *testing.T) {
	g := mustParse(t, base+"stall: {window: 3}\n").Stall
	call := Turn{Speaker: "runner", Tool: "coderunner.run_js", Arguments: `{"code":"x"}`}
	for _, tc := range []struct {
		name  string
		turns []Turn
		want  string
	}{
		{"one turn", []Turn{call}, ""},
		{"same call", []Turn{call, {Speaker: "coder", Text: "fix"}, call}, StallRepeatedCall},
		{"same call outside the window", []Turn{call, {Text: "a"}, {Text: "b"}, call}, ""},
		{"other arguments", []Turn{call, {Speaker: "runner", Tool: "coderunner.run_js", Arguments: `{"code":"y"}`}}, ""},
		{"same call by someone else", []Turn{call, {Speaker: "coder", Tool: call.Tool, Arguments: call.Arguments}}, ""},
		{"same message", []Turn{{Speaker: "coder", Text: "done"}, {Speaker: "admin", Text: "done"}}, StallRepeatedMessage},
		{"empty messages", []Turn{{Speaker: "a"}, {Speaker: "a"}}, ""},
	} {
		r, stalled := g.Check(tc.turns)
		if r != tc.want || stalled != (tc.want != "") {
			t.Errorf("%s: Check = %q, %v; want %q", tc.name, r, stalled, tc.want)
		}
	}
	if _, stalled := (*StallGuard)(nil).Check([]Turn{call, call}); stalled {
		t.Error("a flow without a stall guard stalled")
	}
}

func TestReply(t *testing.T) {
	f := mustParse(t, `
participants:
  - name: reviewer
    profile: reviewer
    reply:
      function: review
      parameters:
        type: object
        properties: {approved: {type: boolean}, note: {type: string}}
        required: [approved]
        additionalProperties: false
`)
	p, _ := f.Participant("reviewer")
	if p.Reply.MaxAttempts != DefaultMaxAttempts {
		t.Errorf("max_attempts = %d", p.Reply.MaxAttempts)
	}
	if err := p.Reply.Validate([]byte(`{"approved": true, "note": "fine"}`)); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	for args, want := range map[string]string{
		`{"note": "x"}`:                  "missing properties: 'approved'",
		`{"approved": "yes"}`:            "expected boolean, but got string",
		`{"approved": true, "extra": 1}`: "additionalProperties 'extra' not allowed",
		`{"approved": true`:              "arguments of review are not JSON",
	} {
		if err := p.Reply.Validate([]byte(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%s) = %v; want %q", args, err, want)
		}
	}
}

// BenchmarkNextCandidates is one graph step of the example flow: the two
// CEL conditions on the runner's edges.
func BenchmarkNextCandidates(b *testing.B) {
	f, err := Load("../../examples/flows/code-interpreter.yaml", nil)
	if err != nil {
		b.Fatal(err)
	}
	s := State{Round: 6, Sender: "runner", Text: "63245986", Result: map[string]any{"ok": true, "stdout": "63245986\n"}}
	for b.Loop() {
		if next, err := f.NextCandidates(s); err != nil || next[0] != "admin" {
			b.Fatal(next, err)
		}
	}
}
