package flow

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/pkg/agent"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// names is a ProfileSet for tests.
type names []string

func (n names) Names() []string { return n }

var testProfiles = names{"admin", "coder", "reviewer"}

// base is a valid graph flow that the table tests break one way each.
const base = `
participants:
  - {name: admin, profile: admin}
  - {name: coder, profile: coder}
  - {name: runner, tool: coderunner.run_js, arguments: {code: text}}
  - {name: user, human: true}
selection:
  mode: graph
  edges:
    - {from: admin, to: coder}
    - {from: coder, to: runner}
    - {from: runner, to: admin, when: "result.ok"}
    - {from: runner, to: coder, otherwise: true}
`

func mustParse(t *testing.T, doc string) *Flow {
	t.Helper()
	f, err := Parse("test", []byte(doc), "yaml", testProfiles)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return f
}

func TestParseDefaults(t *testing.T) {
	f := mustParse(t, base)
	if f.Start != "admin" {
		t.Errorf("start = %q, want the first participant", f.Start)
	}
	if got := f.Termination; got == nil || got.MaxRounds != DefaultMaxRounds {
		t.Errorf("termination = %+v, want max_rounds %d", got, DefaultMaxRounds)
	}
	if p, _ := f.Participant("coder"); p.Context.Keep != KeepAll || p.Kind() != KindAgent {
		t.Errorf("coder = %+v", p)
	}
	if p, _ := f.Participant("runner"); p.Kind() != KindTool {
		t.Errorf("runner kind = %s", p.Kind())
	}
	if f.Human() != "user" {
		t.Errorf("human = %q", f.Human())
	}

	f = mustParse(t, base+"termination: {text_mention: TERMINATE}\nstall: {}\n")
	if len(f.Termination.Any) != 2 || f.Termination.Any[1].MaxRounds != DefaultMaxRounds {
		t.Errorf("a termination without max_rounds = %+v, want the default round cap added under any", f.Termination)
	}
	if f.Stall.Window != DefaultStallWindow || f.Stall.Action != StallStop {
		t.Errorf("stall = %+v", f.Stall)
	}
	f = mustParse(t, "participants: [{name: a, profile: admin}, {name: b, profile: coder}]\nselection: {mode: selector, selector: {profile: admin}}")
	if s := f.Selection.Selector; s.MaxAttempts != DefaultMaxAttempts || s.OnFailure != FailStop || !*s.AllowRepeatSpeaker {
		t.Errorf("selector = %+v", s)
	}
}

// TestParseErrors has one case per validation rule: each document must be
// refused with a message that names the path and the reason.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"not yaml", "participants: [", []string{"not valid YAML"}},
		{"unknown field", base + "max_round: 3\n", []string{`unknown field "max_round"`}},
		{"trailing json", "", []string{}}, // replaced below with a JSON document
		{"no participants", "selection: {mode: round_robin}", []string{"participants: at least one participant is required"}},
		{"null participant", "participants: [null]", []string{"participants[0]: is empty"}},
		{"bad name", "participants: [{name: Admin, profile: admin}]", []string{`participants[0].name: "Admin" must be lowercase`}},
		{"duplicate name", "participants: [{name: a, profile: admin}, {name: a, profile: coder}]", []string{`participants[1].name: "a" is already the name of another participant`}},
		{"no kind", "participants: [{name: a}]", []string{"participants[0]: set exactly one of profile (an agent), tool (a tool agent) and human: true; 0 are set"}},
		{"two kinds", "participants: [{name: a, profile: admin, human: true}]", []string{"participants[0]: set exactly one of", "2 are set"}},
		{"unknown profile", "participants: [{name: a, profile: nobody}]", []string{`participants[0].profile: no agent profile named "nobody" (profiles: admin, coder, reviewer)`}},
		{"two humans", "participants: [{name: a, human: true}, {name: b, human: true}]", []string{"participants[1].human: a flow has at most one human participant"}},
		{"bad tool name", "participants: [{name: r, tool: run_js, arguments: {code: text}}]", []string{`participants[0].tool: "run_js" must be a qualified tool name, skill.tool`}},
		{"llm tool name", "participants: [{name: r, tool: coderunner__run_js, arguments: {code: text}}]", []string{"must be a qualified tool name"}},
		{"tool name too long", "participants: [{name: r, tool: " + strings.Repeat("a", 40) + "." + strings.Repeat("b", 30) + ", arguments: {code: text}}]", []string{"characters as skill__tool; the limit is 64"}},
		{"tool without arguments", "participants: [{name: r, tool: coderunner.run_js}]", []string{"participants[0].arguments: a tool agent needs its arguments mapped"}},
		{"arguments on an agent", "participants: [{name: a, profile: admin, arguments: {x: text}}]", []string{"participants[0].arguments: only a tool agent"}},
		{"argument does not compile", "participants: [{name: r, tool: coderunner.run_js, arguments: {code: 'text +'}}]", []string{`participants[0].arguments.code: CEL "text +": ERROR`}},
		{"argument unknown variable", "participants: [{name: r, tool: coderunner.run_js, arguments: {code: message}}]", []string{"participants[0].arguments.code", "undeclared reference to 'message'"}},
		{"unknown start", base + "start: boss\n", []string{`start: no participant named "boss" (participants: admin, coder, runner, user)`}},
		{"bad mode", "participants: [{name: a, profile: admin}]\nselection: {mode: random}", []string{`selection.mode: must be round_robin, selector or graph, not "random"`}},
		{"edges without mode", "participants: [{name: a, profile: admin}]\nselection: {edges: [{from: a, to: a}]}", []string{"selection.mode: is required when edges or a selector are given"}},
		{"round robin with edges", "participants: [{name: a, profile: admin}]\nselection: {mode: round_robin, edges: [{from: a, to: a}]}", []string{"selection.edges: round_robin takes turns in file order"}},
		{"round robin with selector", "participants: [{name: a, profile: admin}]\nselection: {mode: round_robin, selector: {profile: admin}}", []string{"selection.selector: round_robin uses no selector"}},
		{"selector missing", "participants: [{name: a, profile: admin}]\nselection: {mode: selector}", []string{"selection.selector: mode selector needs a selector"}},
		{"graph without edges", "participants: [{name: a, profile: admin}]\nselection: {mode: graph}", []string{"selection.edges: mode graph needs at least one edge"}},
		{"selector without profile", "participants: [{name: a, profile: admin}]\nselection: {mode: selector, selector: {}}", []string{"selection.selector.profile: name the agent profile"}},
		{"selector unknown profile", "participants: [{name: a, profile: admin}]\nselection: {mode: selector, selector: {profile: boss}}", []string{`selection.selector.profile: no agent profile named "boss"`}},
		{"selector attempts", "participants: [{name: a, profile: admin}]\nselection: {mode: selector, selector: {profile: admin, max_attempts: 11}}", []string{"selection.selector.max_attempts: must be from 1 to 10, not 11"}},
		{"selector failure rule", "participants: [{name: a, profile: admin}]\nselection: {mode: selector, selector: {profile: admin, on_failure: guess}}", []string{`selection.selector.on_failure: must be stop, human or first, not "guess"`}},
		{"failure to a missing human", "participants: [{name: a, profile: admin}]\nselection: {mode: selector, selector: {profile: admin, on_failure: human}}", []string{"selection.selector.on_failure: on_failure human needs a human participant"}},
		{"null edge", "participants: [{name: a, profile: admin}]\nselection: {mode: graph, edges: [null]}", []string{"selection.edges[0]: is empty"}},
		{"edge to unknown", base + "    - {from: coder, to: tester}\n    - {from: judge, to: admin}\n", []string{`selection.edges[4].to: no participant named "tester"`, `selection.edges[5].from: no participant named "judge"`}},
		{"unreachable", base + "    - {from: reviewer, to: admin}\n", []string{`selection.edges[4].from: no participant named "reviewer"`}},
		{"when does not compile", strings.Replace(base, `"result.ok"`, `"result.ok &&"`, 1), []string{`selection.edges[2].when: CEL "result.ok &&": ERROR`}},
		{"when is not bool", strings.Replace(base, `"result.ok"`, `"round + 1"`, 1), []string{`selection.edges[2].when: CEL "round + 1": is of type int; a condition must be bool`}},
		{"when is a string", strings.Replace(base, `"result.ok"`, `"text"`, 1), []string{"is of type string; a condition must be bool"}},
		{"when type error", strings.Replace(base, `"result.ok"`, `"round == 'three'"`, 1), []string{"selection.edges[2].when", "no matching overload for '_==_'"}},
		{"blank when", strings.Replace(base, `"result.ok"`, `" "`, 1), []string{"selection.edges[2].when: is empty"}},
		{"otherwise with when", strings.Replace(base, "otherwise: true", "otherwise: true, when: 'true'", 1), []string{"selection.edges[3]: an otherwise edge is taken when no other edge holds, so it has no when"}},
		{"two otherwise", base + "    - {from: runner, to: admin, otherwise: true}\n", []string{`selection.edges[4].otherwise: "runner" already has an otherwise edge (selection.edges[3])`}},
		{"bad context keep", "participants: [{name: a, profile: admin, context: {keep: some}}]", []string{`participants[0].context.keep: must be all, last_n, senders or clear, not "some"`}},
		{"last without keep", "participants: [{name: a, profile: admin, context: {last: 3}}]", []string{"participants[0].context.keep: is required when last or senders are given"}},
		{"last_n without last", "participants: [{name: a, profile: admin, context: {keep: last_n}}]", []string{"participants[0].context.last: keep last_n needs last, a positive number of messages, not 0"}},
		{"last_n with senders", "participants: [{name: a, profile: admin, context: {keep: last_n, last: 2, senders: [a]}}]", []string{"participants[0].context.senders: keep last_n takes no senders"}},
		{"senders empty", "participants: [{name: a, profile: admin, context: {keep: senders}}]", []string{"participants[0].context.senders: keep senders needs at least one participant name"}},
		{"senders negative last", "participants: [{name: a, profile: admin, context: {keep: senders, senders: [a], last: -1}}]", []string{"participants[0].context.last: must be positive"}},
		{"senders unknown", "participants: [{name: a, profile: admin, context: {keep: senders, senders: [b]}}]", []string{`participants[0].context.senders[0]: no participant named "b"`}},
		{"clear with last", "participants: [{name: a, profile: admin, context: {keep: clear, last: 1}}]", []string{"participants[0].context: keep clear takes neither last nor senders"}},
		{"termination two kinds", base + "termination: {max_rounds: 3, text_mention: DONE}\n", []string{"termination: set exactly one of", "2 are set (max_rounds, text_mention)"}},
		{"termination empty", base + "termination: {}\n", []string{"termination: set exactly one of", "0 are set"}},
		{"termination null child", base + "termination: {any: [null]}\n", []string{"termination.any[0]: is empty"}},
		{"termination bad rounds", base + "termination: {all: [{max_rounds: -1}, {token_budget: -5}]}\n", []string{"termination.all[0].max_rounds: must be from 1 to 10000, not -1", "termination.all[1].token_budget: must be a positive number of tokens, not -5"}},
		{"termination blank mention", base + "termination: {text_mention: ' '}\n", []string{"termination.text_mention: is blank"}},
		{"termination bad duration", base + "termination: {time_limit: soon}\n", []string{`duration "soon": want a number and a unit`}},
		{"termination negative duration", base + "termination: {time_limit: -1m}\n", []string{"termination.time_limit: must be a positive duration, not -1m0s"}},
		{"termination deep", base + "termination: " + strings.Repeat("{any: [", 20) + "{max_rounds: 1}" + strings.Repeat("]}", 20) + "\n", []string{"any/all nest deeper than 16 levels"}},
		{"handoff without human", "participants: [{name: a, profile: admin}]\ntermination: {handoff_to_human: true}", []string{"termination.handoff_to_human: handoff_to_human needs a human participant"}},
		{"reply on a tool agent", "participants: [{name: r, tool: s.t, arguments: {x: text}, reply: {function: f, parameters: {type: object}}}]", []string{"participants[0].reply: only an agent participant"}},
		{"reply function name", "participants: [{name: a, profile: admin, reply: {function: Review, parameters: {type: object}}}]", []string{`participants[0].reply.function: "Review" must be lowercase`}},
		{"reply without parameters", "participants: [{name: a, profile: admin, reply: {function: review}}]", []string{"participants[0].reply.parameters: give the JSON Schema"}},
		{"reply not an object", "participants: [{name: a, profile: admin, reply: {function: review, parameters: {type: string}}}]", []string{`participants[0].reply.parameters: must be a JSON Schema with "type": "object"`}},
		{"reply bad schema", "participants: [{name: a, profile: admin, reply: {function: review, parameters: {type: object, properties: {ok: {type: 5}}}}}]", []string{"participants[0].reply.parameters: jsonschema skillhost:///reply.json compilation failed: '/properties/ok/type' does not validate"}},
		{"reply external ref", "participants: [{name: a, profile: admin, reply: {function: review, parameters: {type: object, $ref: 'file:///etc/passwd'}}}]", []string{"participants[0].reply.parameters", "a reply schema may not load anything"}},
		{"reply attempts", "participants: [{name: a, profile: admin, reply: {function: review, parameters: {type: object}, max_attempts: 0.5}}]", []string{"cannot unmarshal number 0.5"}},
		{"stall window", base + "stall: {window: 1}\n", []string{"stall.window: must be from 2 to 100, not 1"}},
		{"stall action", base + "stall: {action: panic}\n", []string{`stall.action: must be stop or human, not "panic"`}},
		{"stall to a missing human", "participants: [{name: a, profile: admin}]\nstall: {action: human}", []string{"stall.action: action human needs a human participant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, format := tc.doc, "yaml"
			if tc.name == "trailing json" {
				doc, format, tc.want = `{"participants": [{"name": "a", "profile": "admin"}]} {}`, "json", []string{"trailing data after the JSON value"}
			}
			_, err := Parse("test", []byte(doc), format, testProfiles)
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseUnreachable(t *testing.T) {
	doc := strings.Replace(base, "    - {from: coder, to: runner}\n", "", 1)
	doc = strings.Replace(doc, "- {name: user, human: true}", "- {name: user, human: true}\n  - {name: reviewer, profile: reviewer}", 1)
	_, err := Parse("test", []byte(doc), "yaml", testProfiles)
	for _, w := range []string{
		`participants[2]: "runner" is unreachable: no path of edges leads to it from the start, "admin"`,
		`participants[4]: "reviewer" is unreachable`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), `"user" is unreachable`) {
		t.Errorf("the human is reported unreachable, but it gets turns by handoff:\n%v", err)
	}
}

// TestParseAllProblemsAtOnce: one document with several independent
// mistakes gets them all, one per line, in document order.
func TestParseAllProblemsAtOnce(t *testing.T) {
	doc := `
participants:
  - {name: a, profile: nobody}
  - {name: a, profile: admin}
  - {name: r, tool: x, arguments: {code: "text +"}}
selection:
  mode: graph
  edges:
    - {from: a, to: ghost, when: "round"}
termination: {time_limit: 0s}
`
	_, err := Parse("Bad Name", []byte(doc), "yaml", testProfiles)
	if err == nil {
		t.Fatal("Parse accepted a document with six problems")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`flow name "Bad Name"`,
		`participants[1].name: "a" is already`,
		`participants[0].profile: no agent profile named "nobody"`,
		`participants[2].tool: "x" must be a qualified tool name`,
		`participants[2].arguments.code: CEL "text +"`,
		`selection.edges[0].to: no participant named "ghost"`,
		`selection.edges[0].when: CEL "round": is of type int`,
		`participants[2]: "r" is unreachable`,
		`termination: set exactly one of`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
}

// TestYAMLAndJSON: the same flow in both formats loads to the same thing.
func TestYAMLAndJSON(t *testing.T) {
	dir := t.TempDir()
	yamlDoc := `
description: Two agents take turns.
participants:
  - name: writer
    profile: coder
    context: {keep: last_n, last: 4}
  - name: critic
    profile: reviewer
    context: {keep: senders, senders: [writer]}
termination:
  any:
    - text_mention: APPROVED
    - time_limit: 90s
`
	jsonDoc := `{
  "description": "Two agents take turns.",
  "participants": [
    {"name": "writer", "profile": "coder", "context": {"keep": "last_n", "last": 4}},
    {"name": "critic", "profile": "reviewer", "context": {"keep": "senders", "senders": ["writer"]}}
  ],
  "termination": {"any": [{"text_mention": "APPROVED"}, {"time_limit": "90s"}]}
}`
	for name, doc := range map[string]string{"pair.yaml": yamlDoc, "pair2.json": jsonDoc, "README.md": "not a flow", "notes.txt": "{"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := LoadDir(dir, testProfiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "pair,pair2" {
		t.Fatalf("flows = %s", got)
	}
	y, _ := set.Get("pair")
	j, _ := set.Get("pair2")
	if y.Selection.Mode != ModeRoundRobin || y.Termination.Any[1].TimeLimit != Duration(90*time.Second) {
		t.Errorf("yaml flow = %+v", y)
	}
	j.Name = y.Name
	if !reflect.DeepEqual(strip(y), strip(j)) {
		t.Errorf("the YAML and JSON flows differ:\n%+v\n%+v", y, j)
	}
	if got, err := y.NextCandidates(State{Round: 1, Sender: "critic"}); err != nil || !reflect.DeepEqual(got, []string{"writer"}) {
		t.Errorf("round robin after the last participant = %v, %v", got, err)
	}
}

// strip drops the compiled programs, which reflect.DeepEqual cannot compare.
func strip(f *Flow) *Flow {
	c := *f
	c.byName, c.edges = nil, nil
	c.Participants = nil
	for _, p := range f.Participants {
		q := *p
		q.args = nil
		c.Participants = append(c.Participants, &q)
	}
	return &c
}

func TestLoadDirErrors(t *testing.T) {
	if set, err := LoadDir(filepath.Join(t.TempDir(), "absent"), nil); err != nil || len(set.Names()) != 0 {
		t.Errorf("LoadDir of a missing folder = %v, %v; want an empty set", set, err)
	}
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"a.yaml":   "participants: []",
		"a.json":   `{"participants": [{"name": "x", "profile": "admin"}]}`,
		"b.yml":    "participants: [{name: x, profile: ghost}]",
		"Big.json": `{"participants": [{"name": "x", "profile": "admin"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "huge.json"), make([]byte, MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDir(dir, testProfiles)
	for _, w := range []string{
		"Big.json: " + `flow name "Big"`,
		"a.yaml: participants: at least one participant is required",
		"b.yml: participants[0].profile: no agent profile named \"ghost\"",
		"huge.json is over 1048576 bytes",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file = %v", err)
	}
}

func TestDirBeside(t *testing.T) {
	if got := DirBeside("examples/agents.json"); got != filepath.Join("examples", "flows") {
		t.Errorf("DirBeside = %s", got)
	}
}

// TestExamples loads examples/flows against the agent profiles beside
// them, parsed by package agent as the host would, and walks the graph
// variant through the seed's scenario.
func TestExamples(t *testing.T) {
	profiles, err := agent.LoadProfiles("../../examples/flows/profiles/code-interpreter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set, err := LoadDir("../../examples/flows", profiles)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "code-interpreter,code-interpreter-selector" {
		t.Fatalf("example flows = %s", got)
	}
	sel, _ := set.Get("code-interpreter-selector")
	if sel.Selection.Mode != ModeSelector || sel.Selection.Selector.Profile != "admin" {
		t.Errorf("selector variant = %+v", sel.Selection)
	}
	if got, err := sel.NextCandidates(State{Round: 1, Sender: "admin"}); err != nil || strings.Join(got, ",") != "coder,reviewer,runner" {
		t.Errorf("selector candidates after admin = %v, %v", got, err)
	}

	f, _ := set.Get("code-interpreter")
	reviewer, _ := f.Participant("reviewer")
	if err := reviewer.Reply.Validate([]byte(`{"code_present": true, "logic_correct": true, "safe_to_run": true}`)); err == nil || !strings.Contains(err.Error(), "'approved'") {
		t.Errorf("a review without approved: %v", err)
	}
	code := "```js\nlet a = 0, b = 1;\nfor (let i = 0; i < 39; i++) [a, b] = [b, a + b];\nconsole.log(a);\n```"
	lastBy := map[string]string{}
	turn := func(round int, sender, text string, result map[string]any) State {
		lastBy[sender] = text
		return State{Round: round, Sender: sender, Text: text, Result: result, LastBy: lastBy}
	}
	steps := []struct {
		state State
		next  string
	}{
		{State{}, "admin"},
		{turn(1, "admin", "Compute the 39th Fibonacci number.", nil), "coder"},
		{turn(2, "coder", "```js\nconsole.log(fib(39))\n```", nil), "reviewer"},
		// The reviewer sends the first try back: fib is undefined.
		{turn(3, "reviewer", "fib is not defined", map[string]any{"code_present": true, "logic_correct": false, "safe_to_run": true, "approved": false}), "coder"},
		{turn(4, "coder", code, nil), "reviewer"},
		{turn(5, "reviewer", "Looks right.", map[string]any{"code_present": true, "logic_correct": true, "safe_to_run": true, "approved": true}), "runner"},
		{turn(6, "runner", "63245986", map[string]any{"ok": true, "stdout": "63245986\n"}), "admin"},
	}
	for i, st := range steps {
		got, err := f.NextCandidates(st.state)
		if err != nil || len(got) != 1 || got[0] != st.next {
			t.Fatalf("step %d after %s: next = %v, %v; want %s", i, st.state.Sender, got, err, st.next)
		}
		if st.next == "runner" {
			args, err := f.ToolArguments("runner", st.state)
			if err != nil || args["code"] != code || args["timeout_ms"] != float64(5000) {
				t.Fatalf("runner arguments = %v, %v", args, err)
			}
		}
	}
	// A runner error goes back to the coder.
	if got, err := f.NextCandidates(State{Round: 7, Sender: "runner", Result: map[string]any{"ok": false, "error": map[string]any{"code": "exception"}}}); err != nil || got[0] != "coder" {
		t.Errorf("after a runner error: %v, %v", got, err)
	}
	if r, stop := f.ShouldStop(State{Round: 7, Sender: "admin", Text: "The answer is 63245986. TERMINATE"}); !stop || r != ReasonTextMention {
		t.Errorf("ShouldStop after TERMINATE = %q, %v", r, stop)
	}
}
