package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// profilesDoc is the profiles of most tests: read-only and full agents over
// skill alpha, and a researcher that may delegate to a helper over beta.
const profilesDoc = `{
  "default": "reader",
  "max_delegation_depth": 1,
  "profiles": {
    "reader":     {"system": "You are a test agent.", "skills": ["alpha"]},
    "writer":     {"system": "You may change things.", "skills": ["alpha"], "mode": "full"},
    "researcher": {"system": "Research.", "skills": ["alpha"], "delegates": ["helper"]},
    "helper":     {"system": "Help.", "description": "Knows beta.", "skills": ["beta"], "delegates": ["researcher"]},
    "tiny":       {"skills": ["alpha"], "context_budget": 30},
    "small":      {"skills": ["alpha"], "context_budget": 1500},
    "short":      {"skills": ["alpha"], "max_steps": 2}
  }
}`

func sys(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "system", Content: s}
}
func user(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "user", Content: s}
}
func assistantCalls(content string, tcs ...openai.ToolCall) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", Content: content, ToolCalls: tcs}
}
func toolMsg(id, content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "tool", Content: content, ToolCallID: id}
}

// toolError decodes a tool message holding {"error": {...}}.
func toolError(t *testing.T, content string) registry.Error {
	t.Helper()
	var body struct {
		Error *registry.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(content), &body); err != nil || body.Error == nil {
		t.Fatalf("tool message is not an error: %s", content)
	}
	return *body.Error
}

func TestAnswersDirectly(t *testing.T) {
	f := newFakeLLM(t, text("Hi there!"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "", "say hi", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Answer != "Hi there!" || resp.FinishReason != "stop" || resp.Steps != 1 || resp.Profile != "reader" || resp.Model != "test-model" {
		t.Fatalf("response = %+v", resp)
	}
	if len(resp.ToolCalls) != 0 || resp.Usage.TotalTokens != 15 || resp.Counters.ModelCalls != 1 {
		t.Fatalf("response = %+v", resp)
	}
	r := f.request(0)
	if r.auth != "Bearer "+testKey {
		t.Fatalf("Authorization = %q", r.auth)
	}
	if r.req.Model != "test-model" || r.req.Stream {
		t.Fatalf("request = %s", r.raw)
	}
	jsonEqual(t, "messages", r.field(t, "messages"), []openai.ChatCompletionMessage{sys("You are a test agent."), user("say hi")})
	// "say hi" matches no tool text, so the read-only tools of the
	// profile's skill are offered unranked; never a write tool.
	jsonEqual(t, "tools", r.field(t, "tools"), toolsPayload(t, "alpha.big", "alpha.echo", "alpha.env"))
	jsonEqual(t, "tools_offered", resp.ToolsOffered, []string{"alpha__big", "alpha__echo", "alpha__env"})
}

func TestCallsOneTool(t *testing.T) {
	f := newFakeLLM(t, calls(tc("call_1", "alpha__echo", `{"msg":"hello"}`)), text("The skill said hello."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "reader", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Answer != "The skill said hello." || resp.Steps != 2 {
		t.Fatalf("response = %+v", resp)
	}
	// The hit first, then the profile's other read-only tools.
	jsonEqual(t, "first tools", f.request(0).field(t, "tools"), toolsPayload(t, "alpha.echo", "alpha.big", "alpha.env"))
	want := invoke(t, "alpha.echo", `{"msg":"hello"}`) // same instance, so the same pid
	r := f.request(1)
	jsonEqual(t, "messages", r.field(t, "messages"), []openai.ChatCompletionMessage{
		sys("You are a test agent."), user("echo hello"),
		assistantCalls("", tc("call_1", "alpha__echo", `{"msg":"hello"}`)),
		toolMsg("call_1", want),
	})
	jsonEqual(t, "second tools", r.field(t, "tools"), toolsPayload(t, "alpha.echo", "alpha.big", "alpha.env"))
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	c := resp.ToolCalls[0]
	if c.ID != "call_1" || c.Name != "alpha__echo" || c.Tool != "alpha.echo" || !c.OK || c.Skill != "alpha" || c.Version != "1.0.0" ||
		c.Summary != want || c.Error != nil || c.Profile != "reader" || c.Depth != 0 {
		t.Fatalf("tool call = %+v", c)
	}
	jsonEqual(t, "arguments", c.Arguments, `{"msg":"hello"}`)
	jsonEqual(t, "skills", resp.Skills, `{"alpha":"1.0.0"}`)
	if resp.Counters.ToolCalls != 1 || resp.Counters.ToolErrors != 0 || resp.Counters.ModelCalls != 2 || resp.Usage.TotalTokens != 30 {
		t.Fatalf("counters = %+v usage = %+v", resp.Counters, resp.Usage)
	}
}

func TestParallelToolCallsRunConcurrently(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("c_sleep", "alpha__sleep", `{"ms":400}`), tc("c_echo", "alpha__echo", `{"msg":"x"}`)),
		text("done"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "writer", "echo hello and sleep", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	// A full profile is offered write tools too, the hits first; it may use
	// more of alpha's tools than max_tools, so it can search for them.
	jsonEqual(t, "tools", f.request(0).field(t, "tools"), append(toolsPayload(t, "alpha.echo", "alpha.sleep", "alpha.big", "alpha.crash", "alpha.env"), searchTool))
	// The slow call was asked for first. Had the calls run one after the
	// other, it would also have finished first.
	var order []string
	for _, e := range evs.list() {
		if e.Type == EventToolCallStarted || e.Type == EventToolCallFinished {
			order = append(order, string(e.Type)+" "+e.Call.ID)
		}
	}
	want := []string{"tool_call_started c_sleep", "tool_call_started c_echo", "tool_call_finished c_echo", "tool_call_finished c_sleep"}
	if len(order) != 4 || order[2] != want[2] || order[3] != want[3] {
		t.Fatalf("event order = %v; want both started, then echo finished before sleep", order)
	}
	// The tool messages keep the order of the calls.
	msgs := f.request(1).req.Messages
	if len(msgs) != 5 || msgs[3].ToolCallID != "c_sleep" || msgs[4].ToolCallID != "c_echo" {
		t.Fatalf("messages = %+v", msgs)
	}
	jsonEqual(t, "sleep result", msgs[3].Content, `{"version":"1.0.0","msg":"slept","pid":0}`)
	jsonEqual(t, "echo result", msgs[4].Content, invoke(t, "alpha.echo", `{"msg":"x"}`))
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID != "c_sleep" || !resp.ToolCalls[0].OK || !resp.ToolCalls[1].OK {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
}

func pidOf(t *testing.T, echoResult string) int {
	t.Helper()
	var r struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(echoResult), &r); err != nil || r.PID == 0 {
		t.Fatalf("not an echo result: %s", echoResult)
	}
	return r.PID
}

func TestInventedToolsAreAnsweredAndCounted(t *testing.T) {
	pid := pidOf(t, invoke(t, "alpha.echo", `{}`))
	f := newFakeLLM(t,
		// alpha.crash exists but is not read-only, so a reader was never
		// offered it; weather__forecast does not exist at all.
		calls(tc("c1", "alpha__crash", `{}`), tc("c2", "weather__forecast", `{"city":"Oslo"}`)),
		text("I cannot do that."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "reader", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.request(1).req.Messages
	for i, name := range []string{"alpha__crash", "weather__forecast"} {
		e := toolError(t, msgs[3+i].Content)
		if e.Code != registry.CodeUnknownTool || !strings.Contains(e.Message, `"`+name+`"`) || !strings.Contains(e.Message, "alpha__echo") {
			t.Fatalf("tool error for %s = %+v", name, e)
		}
	}
	if resp.Counters.InventedTools != 2 || resp.Counters.ToolCalls != 2 || resp.Answer != "I cannot do that." {
		t.Fatalf("response = %+v", resp)
	}
	if c := resp.ToolCalls[0]; c.OK || c.Error == nil || c.Error.Code != registry.CodeUnknownTool || c.Tool != "" {
		t.Fatalf("tool call = %+v", c)
	}
	if got := pidOf(t, invoke(t, "alpha.echo", `{}`)); got != pid {
		t.Fatalf("alpha restarted (pid %d → %d): the crash tool was called", pid, got)
	}
	if s := a.Stats(); s.InventedTools < 2 || s.Runs < 1 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestInvalidArgumentsThenCorrected(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("c1", "alpha__big", `{"bytes":"five"}`)),
		calls(tc("c2", "alpha__big", `{"bytes": 5`)),
		calls(tc("c3", "alpha__big", `{"bytes":5}`)),
		text("xxxxx"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "reader", "return a string of length 5", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "tools", f.request(0).field(t, "tools"), toolsPayload(t, "alpha.big", "alpha.env", "alpha.echo"))
	msgs := f.request(3).req.Messages
	if len(msgs) != 8 {
		t.Fatalf("messages = %+v", msgs)
	}
	e := toolError(t, msgs[3].Content)
	if e.Code != registry.CodeInvalidArguments || !strings.Contains(e.Message, "/bytes") {
		t.Fatalf("schema error = %+v", e)
	}
	problems, _ := json.Marshal(e.Details["problems"])
	if !strings.Contains(string(problems), `"pointer":"/bytes"`) {
		t.Fatalf("problems = %s", problems)
	}
	e = toolError(t, msgs[5].Content)
	if e.Code != registry.CodeInvalidArguments || !strings.Contains(e.Message, "not valid JSON") {
		t.Fatalf("syntax error = %+v", e)
	}
	if msgs[7].Content != `"xxxxx"` || msgs[7].ToolCallID != "c3" {
		t.Fatalf("corrected call answered %+v", msgs[7])
	}
	if resp.Counters.InvalidArguments != 2 || resp.Counters.ToolErrors != 0 || resp.Steps != 4 {
		t.Fatalf("counters = %+v steps %d", resp.Counters, resp.Steps)
	}
	// Invalid JSON is kept in the response as a string.
	jsonEqual(t, "bad arguments", resp.ToolCalls[1].Arguments, `"{\"bytes\": 5"`)
}

func TestStreamAssemblesToolCallDeltas(t *testing.T) {
	first := calls(tc("call_a", "alpha__sleep", `{"ms":1,"ignore_cancel":false}`), tc("call_b", "alpha__echo", `{"msg":"hello, 世界"}`))
	first.msg.Content = "Let me check."
	f := newFakeLLM(t, first, text("All done: hello, 世界."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "writer", "echo hello and sleep", true, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	if !f.request(0).req.Stream || f.request(0).req.StreamOptions == nil || !f.request(0).req.StreamOptions.IncludeUsage {
		t.Fatalf("request did not stream: %s", f.request(0).raw)
	}
	echo := invoke(t, "alpha.echo", `{"msg":"hello, 世界"}`)
	sleep := invoke(t, "alpha.sleep", `{"ms":1}`)
	jsonEqual(t, "messages", f.request(1).field(t, "messages"), []openai.ChatCompletionMessage{
		sys("You may change things."), user("echo hello and sleep"),
		assistantCalls("Let me check.", tc("call_a", "alpha__sleep", `{"ms":1,"ignore_cancel":false}`), tc("call_b", "alpha__echo", `{"msg":"hello, 世界"}`)),
		toolMsg("call_a", sleep), toolMsg("call_b", echo),
	})
	if resp.Answer != "All done: hello, 世界." || resp.Usage.TotalTokens != 30 {
		t.Fatalf("response = %+v", resp)
	}
	deltas := map[int]string{}
	var types []EventType
	for _, e := range evs.list() {
		if e.Type == EventDelta {
			deltas[e.Step] += e.Delta
		} else {
			types = append(types, e.Type)
		}
	}
	if deltas[1] != "Let me check." || deltas[2] != resp.Answer {
		t.Fatalf("deltas = %v", deltas)
	}
	// The two calls run at once, so one may finish before the other starts:
	// what is fixed is the start first, and each call's start before its end.
	if len(types) != 5 || types[0] != EventStart {
		t.Fatalf("event types = %v, want start and a started and a finished event per call", types)
	}
	seen := map[string]EventType{}
	for _, e := range evs.list() {
		if e.Type != EventToolCallStarted && e.Type != EventToolCallFinished {
			continue
		}
		want := EventType("") // a call starts first
		if e.Type == EventToolCallFinished {
			want = EventToolCallStarted
		}
		if prev := seen[e.Call.ID]; prev != want {
			t.Fatalf("call %s: %s after %q", e.Call.ID, e.Type, prev)
		}
		seen[e.Call.ID] = e.Type
	}
	if len(seen) != 2 || seen["call_a"] != EventToolCallFinished || seen["call_b"] != EventToolCallFinished {
		t.Fatalf("calls' last events = %v, want both finished", seen)
	}
}

func TestToolCallAssembler(t *testing.T) {
	idx := intp
	for _, tt := range []struct {
		name   string
		deltas []openai.ToolCall
		want   []openai.ToolCall
	}{
		{"interleaved by index", []openai.ToolCall{
			{Index: idx(0), ID: "a", Function: openai.FunctionCall{Name: "x__y"}},
			{Index: idx(1), ID: "b", Function: openai.FunctionCall{Name: "p__q", Arguments: `{"k"`}},
			{Index: idx(0), Function: openai.FunctionCall{Arguments: `{"n":`}},
			{Index: idx(1), Function: openai.FunctionCall{Arguments: `:2}`}},
			{Index: idx(0), Function: openai.FunctionCall{Arguments: `1}`}},
		}, []openai.ToolCall{tc("a", "x__y", `{"n":1}`), tc("b", "p__q", `{"k":2}`)}},
		{"name repeated in every delta", []openai.ToolCall{
			{Index: idx(0), ID: "a", Function: openai.FunctionCall{Name: "x__y", Arguments: `{`}},
			{Index: idx(0), ID: "a", Function: openai.FunctionCall{Name: "x__y", Arguments: `}`}},
		}, []openai.ToolCall{tc("a", "x__y", `{}`)}},
		{"name split", []openai.ToolCall{
			{Index: idx(0), ID: "a", Function: openai.FunctionCall{Name: "calc__"}},
			{Index: idx(0), Function: openai.FunctionCall{Name: "evaluate", Arguments: `{}`}},
		}, []openai.ToolCall{tc("a", "calc__evaluate", `{}`)}},
		{"whole calls without index (Ollama)", []openai.ToolCall{
			{ID: "a", Function: openai.FunctionCall{Name: "x__y", Arguments: `{"n":1}`}},
			{ID: "b", Function: openai.FunctionCall{Name: "x__y", Arguments: `{"n":2}`}},
		}, []openai.ToolCall{tc("a", "x__y", `{"n":1}`), tc("b", "x__y", `{"n":2}`)}},
		{"no index, arguments continue the last call", []openai.ToolCall{
			{ID: "a", Function: openai.FunctionCall{Name: "x__y", Arguments: `{"n"`}},
			{Function: openai.FunctionCall{Arguments: `:1}`}},
		}, []openai.ToolCall{tc("a", "x__y", `{"n":1}`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var a toolCallAssembler
			for _, d := range tt.deltas {
				a.add(d)
			}
			jsonEqual(t, "calls", a.calls, tt.want)
		})
	}
}

func TestRetries429ThenSucceeds(t *testing.T) {
	limited := failWith(429, "Rate limit reached for requests")
	limited.header = map[string]string{"Retry-After": "0"}
	f := newFakeLLM(t, limited, text("ok"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "reader", "say hi", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || string(reqs[0].raw) != string(reqs[1].raw) {
		t.Fatalf("want the same request twice, got %d requests", len(reqs))
	}
	if resp.Answer != "ok" || resp.Counters.ModelRetries != 1 || resp.Counters.ModelCalls != 1 {
		t.Fatalf("response = %+v", resp)
	}
	var notices []string
	for _, e := range evs.list() {
		if e.Type == EventNotice {
			notices = append(notices, e.Message)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "429") {
		t.Fatalf("notices = %q", notices)
	}
}

func TestAuthErrorIsNotRetried(t *testing.T) {
	f := newFakeLLM(t, failWith(401, "Incorrect API key provided: "+testKey+"."), text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := ask(a, "reader", "say hi", false, nil)
	e := registry.AsError(err)
	if e.Code != CodeModelError || e.Retryable || !strings.Contains(e.Message, "refused the API key") || !strings.Contains(e.Message, "401") {
		t.Fatalf("error = %+v", e)
	}
	if strings.Contains(e.Message, testKey) {
		t.Fatalf("the key the endpoint echoed was not redacted: %s", e.Message)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("a 401 was retried: %d requests", n)
	}
	if httpjson.Status(e.Code) != 502 {
		t.Fatalf("status = %d", httpjson.Status(e.Code))
	}
}

func TestThreeTransientFailuresEndTheRun(t *testing.T) {
	f := newFakeLLM(t, failWith(503, "overloaded"), failWith(500, "oops"), failWith(502, "bad gateway"), text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := ask(a, "reader", "say hi", false, nil)
	e := registry.AsError(err)
	if e.Code != CodeModelUnavailable || !e.Retryable || !strings.Contains(e.Message, "3 times in a row") || !strings.Contains(e.Message, "502") {
		t.Fatalf("error = %+v", e)
	}
	if n := len(f.requests()); n != 3 {
		t.Fatalf("requests = %d, want 3", n)
	}
	if s := a.Stats(); s.RunsFailed != 1 || s.ModelRetries != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestModelUnreachableIsRetriedThenReported(t *testing.T) {
	f := newFakeLLM(t)
	url := f.URL()
	f.srv.Close() // nothing listens there any more
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.BaseURL = url })
	_, err := ask(a, "reader", "say hi", false, nil)
	if e := registry.AsError(err); e.Code != CodeModelUnavailable || e.Details["attempts"] != 3 {
		t.Fatalf("error = %+v", e)
	}
}

func TestToolUseRejectedFallsBackToPlainAnswer(t *testing.T) {
	f := newFakeLLM(t, failWith(400, "registry.ollama.ai/library/gemma:2b does not support tools"), text("Plain answer."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "reader", "echo hello", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	first, second := f.request(0), f.request(1)
	if len(first.req.Tools) != 3 || second.field(t, "tools") != nil {
		t.Fatalf("want tools, then none: %s\n%s", first.raw, second.raw)
	}
	jsonEqual(t, "messages", second.field(t, "messages"), first.field(t, "messages"))
	if resp.Answer != "Plain answer." || len(resp.Notes) != 1 || !strings.Contains(resp.Notes[0], "rejected tool use") ||
		!strings.Contains(resp.Notes[0], "does not support tools") {
		t.Fatalf("response = %+v", resp)
	}
	var sawNotice bool
	for _, e := range evs.list() {
		sawNotice = sawNotice || (e.Type == EventNotice && strings.Contains(e.Message, "without tools"))
	}
	if !sawNotice {
		t.Fatal("no notice event for the fallback")
	}
}

func TestBadRequestWithoutToolsIsNotAFallback(t *testing.T) {
	f := newFakeLLM(t, failWith(400, "messages: invalid role"), text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := ask(a, "reader", "say hi", false, nil)
	if e := registry.AsError(err); e.Code != CodeModelError || !strings.Contains(e.Message, "invalid role") {
		t.Fatalf("error = %+v", e)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("requests = %d", n)
	}
}

func TestContextBudgetRefusesBeforeSending(t *testing.T) {
	f := newFakeLLM(t, text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := ask(a, "tiny", "echo hello", false, nil)
	e := registry.AsError(err)
	if e.Code != CodeContextBudget || e.Details["context_budget"] != 30 || !strings.Contains(e.Message, "tiny") {
		t.Fatalf("error = %+v", e)
	}
	if httpjson.Status(e.Code) != 413 {
		t.Fatalf("status = %d", httpjson.Status(e.Code))
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("a request over budget was sent (%d)", n)
	}
}

func TestToolResultOverBudgetIsAnsweredAsError(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha__big", `{"bytes":20000}`)), text("too big"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "small", "return a string of length 20000", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.request(1).req.Messages
	e := toolError(t, msgs[len(msgs)-1].Content)
	if e.Code != CodeContextBudget || !strings.Contains(e.Message, "ask for less") {
		t.Fatalf("tool error = %+v", e)
	}
	if est := estimateRequest(msgs, f.request(1).req.Tools); est > 1500 {
		t.Fatalf("second request is %d tokens, over the budget", est)
	}
	if resp.ToolCalls[0].OK || resp.Counters.ToolErrors != 1 {
		t.Fatalf("response = %+v", resp)
	}
}

func TestParallelResultsShareTheBudget(t *testing.T) {
	// Each result fits in what the budget leaves; both together do not. One
	// is answered as an error, so the next request still fits.
	f := newFakeLLM(t, calls(tc("c1", "alpha__big", `{"bytes":2400}`), tc("c2", "alpha__big", `{"bytes":2400}`)), text("done"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "small", "return two strings of length 2400", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.request(1).req.Messages
	over := 0
	for _, m := range msgs[len(msgs)-2:] {
		if strings.Contains(m.Content, string(CodeContextBudget)) {
			over++
		}
	}
	if over != 1 {
		t.Fatalf("%d of the 2 results were refused for the budget; want 1: %+v", over, resp.ToolCalls)
	}
	if est := estimateRequest(msgs, f.request(1).req.Tools); est > 1500 {
		t.Fatalf("second request is %d tokens, over the budget", est)
	}
}

func TestStepLimitIsReported(t *testing.T) {
	loop := calls(tc("c", "alpha__echo", `{"msg":"again"}`))
	loop.msg.Content = "Still working."
	f := newFakeLLM(t, loop, loop, text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "short", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The calls of the last step are not run: no model call is left to
	// read their results.
	if resp.FinishReason != "step_limit" || resp.Steps != 2 || resp.Answer != "Still working." ||
		len(resp.Notes) != 1 || !strings.Contains(resp.Notes[0], "2 steps") || !strings.Contains(resp.Notes[0], "1 tool call(s) it asked for last were not run") ||
		len(resp.ToolCalls) != 1 || resp.Counters.ToolCalls != 1 {
		t.Fatalf("response = %+v", resp)
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("requests = %d", n)
	}
}

func TestDelegateRunsASubAgentWithItsOwnContext(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("d1", "delegate_helper", `{"task":"Echo hello."}`)), // researcher
		calls(tc("h1", "beta__echo", `{"msg":"hello"}`)),             // helper
		text("beta said hello"),                                      // helper
		text("The helper reports: beta said hello."),                 // researcher
	)
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "researcher", "echo hello", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	top := f.request(0)
	if got := top.toolNames(); strings.Join(got, ",") != "alpha__echo,alpha__big,alpha__env,delegate_helper" {
		t.Fatalf("researcher tools = %v", got)
	}
	jsonEqual(t, "delegate tool", top.req.Tools[3], delegateTool("delegate_helper", mustProfile(t, a, "helper")))
	// The sub-agent sees its own system prompt and the task, nothing of
	// the researcher's conversation, and only its own tools: beta's, and
	// no delegate tool, since depth 1 is the limit.
	sub := f.request(1)
	jsonEqual(t, "sub-agent messages", sub.field(t, "messages"), []openai.ChatCompletionMessage{sys("Help."), user("Echo hello.")})
	jsonEqual(t, "sub-agent tools", sub.field(t, "tools"), toolsPayload(t, "beta.echo", "beta.big", "beta.env"))
	final := f.request(3).req.Messages
	jsonEqual(t, "delegate result", final[len(final)-1].Content,
		`{"profile":"helper","answer":"beta said hello","finish_reason":"stop","steps":2}`)
	if resp.Answer != "The helper reports: beta said hello." || resp.Counters.Delegations != 1 || resp.Counters.ToolCalls != 2 {
		t.Fatalf("response = %+v", resp)
	}
	jsonEqual(t, "skills", resp.Skills, `{"beta":"1.0.0"}`)
	var sub1 []string
	for _, e := range evs.list() {
		if e.Depth == 1 {
			if e.Parent != "d1" || e.Profile != "helper" {
				t.Fatalf("sub-agent event = %+v", e)
			}
			sub1 = append(sub1, string(e.Type))
		}
	}
	if strings.Join(sub1, ",") != "start,tool_call_started,tool_call_finished" {
		t.Fatalf("sub-agent events = %v", sub1)
	}
	byID := map[string]ToolCall{}
	for _, c := range resp.ToolCalls {
		byID[c.ID] = c
	}
	if byID["h1"].Depth != 1 || byID["h1"].Profile != "helper" || !byID["d1"].OK || byID["d1"].Depth != 0 {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
}

func TestDelegateWithBadArguments(t *testing.T) {
	f := newFakeLLM(t, calls(tc("d1", "delegate_helper", `{"job":"x"}`)), text("sorry"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "researcher", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.request(1).req.Messages
	if e := toolError(t, msgs[len(msgs)-1].Content); e.Code != registry.CodeInvalidArguments || !strings.Contains(e.Message, `"task"`) {
		t.Fatalf("tool error = %+v", e)
	}
	if resp.Counters.InvalidArguments != 1 || resp.Counters.Delegations != 0 || len(f.requests()) != 2 {
		t.Fatalf("response = %+v", resp)
	}
}

func mustProfile(t *testing.T, a *Agent, name string) *Profile {
	t.Helper()
	p, ok := a.Profiles().Get(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	return p
}

func TestKeyReachesOnlyTheModelEndpoint(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha__env", `{}`)), text("done"))
	a, logs := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "reader", "show the environment", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range f.requests() {
		if r.auth != "Bearer "+testKey {
			t.Fatalf("request %d Authorization = %q", i, r.auth)
		}
		if strings.Contains(string(r.raw), testKey) || strings.Contains(string(r.raw), "OPENAI_API_KEY") {
			t.Fatalf("request %d body holds the key: %s", i, r.raw)
		}
	}
	// The env tool really ran and returned the skill's environment.
	env := f.request(1).req.Messages[3].Content
	if !strings.Contains(env, "TESTSKILL_NAME=alpha") {
		t.Fatalf("env result = %s", env)
	}
	b, _ := json.Marshal(resp)
	if strings.Contains(string(b), testKey) || strings.Contains(logs.String(), testKey) {
		t.Fatal("the key leaked into the response or the log")
	}
	if !strings.Contains(logs.String(), "agent run") {
		t.Fatalf("the run was not logged: %s", logs.String())
	}
}

func TestRequestValidation(t *testing.T) {
	f := newFakeLLM(t)
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	for _, tt := range []struct {
		name string
		req  Request
		code registry.Code
		msg  string
	}{
		{"no messages", Request{}, registry.CodeBadRequest, "messages is empty"},
		{"system role", Request{Messages: []Message{{Role: "system", Content: "x"}, {Role: "user", Content: "y"}}}, registry.CodeBadRequest, "messages[0].role"},
		{"last not user", Request{Messages: []Message{{Role: "user", Content: "x"}, {Role: "assistant", Content: "y"}}}, registry.CodeBadRequest, "last message"},
		{"unknown profile", Request{Profile: "nope", Messages: []Message{{Role: "user", Content: "x"}}}, registry.CodeBadRequest, "helper, reader"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Run(t.Context(), tt.req, nil)
			var e *registry.Error
			if !errors.As(err, &e) || e.Code != tt.code || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error = %v", err)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("invalid requests reached the model: %d", n)
	}
}

func TestUnconfiguredModel(t *testing.T) {
	f := newFakeLLM(t)
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.Model = "" })
	if a.Configured() {
		t.Fatal("Configured() with no model")
	}
	_, err := ask(a, "", "hi", false, nil)
	if e := registry.AsError(err); e.Code != CodeUnconfigured || !strings.Contains(e.Message, "--llm-model") || httpjson.Status(e.Code) != 503 {
		t.Fatalf("error = %+v", e)
	}
}

func TestZeroTemperatureIsSent(t *testing.T) {
	f := newFakeLLM(t, text("ok"))
	a, _ := newTestAgent(t, f, `{"profiles": {"cold": {"temperature": 0, "model": "other-model"}}}`, nil)
	if _, err := ask(a, "", "say hi", false, nil); err != nil {
		t.Fatal(err)
	}
	r := f.request(0)
	if r.req.Model != "other-model" || r.field(t, "temperature") == nil || r.req.Temperature > 1e-6 {
		t.Fatalf("request = %s", r.raw)
	}
}

func TestDottedToolNameIsAccepted(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha.echo", `{"msg":"dots"}`)), text("ok"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "reader", "echo hello", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.ToolCalls[0]; !c.OK || c.Tool != "alpha.echo" || resp.Counters.InventedTools != 0 {
		t.Fatalf("tool call = %+v", c)
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	never := text("never")
	never.before = cancel            // the caller goes away once the model has the request
	never.wait = make(chan struct{}) // and the model never answers
	f := newFakeLLM(t, never)
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := a.Run(ctx, Request{Messages: []Message{{Role: "user", Content: "hi"}}}, nil)
	if e := registry.AsError(err); e.Code != registry.CodeCanceled {
		t.Fatalf("error = %+v", e)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("a canceled call was retried: %d requests", n)
	}
}

// fakeBackend serves a skill in-process, for tests that change a registry.
type fakeBackend struct{ calls atomic.Int32 }

func (b *fakeBackend) Acquire() bool { return true }
func (b *fakeBackend) Release()      {}
func (b *fakeBackend) Invoke(ctx context.Context, tool string, args []byte, max int64) ([]byte, error) {
	b.calls.Add(1)
	return []byte(`{"ok":true}`), nil
}

func swapSpec(version string, readOnly bool, b registry.Backend) registry.SkillSpec {
	return registry.SkillSpec{Name: "swap", Version: version, Backend: b, Tools: []registry.ToolSpec{{
		Name: "lookup", Description: "Look a record up.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: registry.Annotations{ReadOnly: readOnly},
	}}}
}

// A hot swap between the offer and the call may bring a version of a tool
// the profile may not call; the call is refused, not made.
func TestSwapToWriteToolIsRefusedToReadOnlyProfile(t *testing.T) {
	reg := registry.New(registry.Config{})
	b1, b2 := &fakeBackend{}, &fakeBackend{}
	if _, err := reg.Put(swapSpec("1.0.0", true, b1)); err != nil {
		t.Fatal(err)
	}
	first := calls(tc("c1", "swap__lookup", `{}`))
	first.before = func() {
		if _, err := reg.Put(swapSpec("2.0.0", false, b2)); err != nil {
			t.Error(err)
		}
	}
	f := newFakeLLM(t, first, text("refused"))
	a, _ := newTestAgent(t, f, `{"profiles": {"ro": {}}}`, func(c *Config) { c.Registry = reg })
	resp, err := ask(a, "", "look a record up", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.request(0).toolNames(); len(got) != 1 || got[0] != "swap__lookup" {
		t.Fatalf("offered %v", got)
	}
	if c := resp.ToolCalls[0]; c.OK || c.Error.Code != registry.CodeForbidden || b1.calls.Load()+b2.calls.Load() != 0 {
		t.Fatalf("tool call = %+v; backend calls %d/%d", c, b1.calls.Load(), b2.calls.Load())
	}
}

// A profile bounded by neither tags nor skills gets the prefilter's hits
// and nothing else: over a large registry, that is what the prefilter is for.
func TestUnboundedProfileIsOfferedOnlyHits(t *testing.T) {
	f := newFakeLLM(t, text("one"), text("two"))
	a, _ := newTestAgent(t, f, `{"profiles": {"any": {}}}`, nil)
	if _, err := ask(a, "", "echo hello", false, nil); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "tools", f.request(0).field(t, "tools"), append(toolsPayload(t, "alpha.echo", "beta.echo"), searchTool))
	// A question no tool matches gets no registry tool, only the way to
	// search for one.
	resp, err := ask(a, "", "say hi", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "tools", f.request(1).field(t, "tools"), []openai.Tool{searchTool})
	jsonEqual(t, "tools_offered", resp.ToolsOffered, []string{toolSearchTools})
}

// A proxy's HTML error page is not an OpenAI error body; it is classified
// by its status all the same. An attempt that hangs past AttemptTimeout is
// transient too.
func TestNonJSONErrorsAndHungAttemptsAreRetried(t *testing.T) {
	hung := text("never")
	hung.wait = make(chan struct{})
	f := newFakeLLM(t, reply{status: 502, body: "<html><body>502 Bad Gateway</body></html>"}, hung, text("third time lucky"))
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.Retry.AttemptTimeout = 100 * time.Millisecond })
	var evs events
	resp, err := ask(a, "reader", "say hi", false, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Answer != "third time lucky" || resp.Counters.ModelRetries != 2 {
		t.Fatalf("response = %+v", resp)
	}
	var notices []string
	for _, e := range evs.list() {
		if e.Type == EventNotice {
			notices = append(notices, e.Message)
		}
	}
	if len(notices) != 2 || !strings.Contains(notices[0], "502 Bad Gateway") || !strings.Contains(notices[1], "no complete answer within 100ms") {
		t.Fatalf("notices = %q", notices)
	}
}

// The answer to a mistake takes room in the next request too: one that does
// not fit what the budget leaves (here an invented tool with a long name,
// which the error repeats) is cut short, so the run goes on.
func TestErrorResultsAreChargedToTheBudget(t *testing.T) {
	long := strings.Repeat("x", 2000)
	f := newFakeLLM(t, calls(tc("c1", long, `{}`)), text("sorry"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "small", "call a tool that does not exist", false, nil)
	if err != nil {
		t.Fatalf("the run failed on the model's mistake: %v", err)
	}
	msgs := f.request(1).req.Messages
	e := toolError(t, msgs[len(msgs)-1].Content)
	if e.Code != registry.CodeUnknownTool || len(e.Message) > 2*summaryRunes {
		t.Fatalf("tool error = %+v", e)
	}
	if est := estimateRequest(msgs, f.request(1).req.Tools); est > 1500 {
		t.Fatalf("second request is %d tokens, over the budget", est)
	}
	if resp.Answer != "sorry" || resp.Counters.InventedTools != 1 {
		t.Fatalf("response = %+v", resp)
	}
}

// Tool calls the endpoint sends without an id get one unique across the
// run, sub-agents included.
func TestMadeUpCallIDsAreUnique(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("", "delegate_helper", `{"task":"one"}`), tc("", "delegate_helper", `{"task":"two"}`)),
		calls(tc("", "beta__echo", `{"msg":"a"}`)), text("a"),
		calls(tc("", "beta__echo", `{"msg":"b"}`)), text("b"),
		text("done"),
	)
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.MaxParallelCalls = 1 })
	resp, err := ask(a, "researcher", "delegate twice", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range resp.ToolCalls {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("tool call ids not unique: %+v", resp.ToolCalls)
		}
		seen[c.ID] = true
	}
	if len(seen) != 4 {
		t.Fatalf("want 4 tool calls, got %+v", resp.ToolCalls)
	}
}

// A sub-agent that fails is a tool error of its caller, counted as one.
func TestFailedDelegationCountsAsToolError(t *testing.T) {
	f := newFakeLLM(t,
		calls(tc("d1", "delegate_helper", `{"task":"Echo hello."}`)),
		failWith(401, "bad key"),
		text("the helper failed"),
	)
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, err := ask(a, "researcher", "delegate", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].OK || resp.Counters.ToolErrors != 1 {
		t.Fatalf("response = %+v", resp)
	}
}

// A key echoed in a plain-text error body is redacted even where the body
// is cut to 500 bytes in the middle of it.
func TestKeyRedactedAcrossTheCut(t *testing.T) {
	body := strings.Repeat("x", 500-len(testKey)/2) + testKey + " was refused"
	f := newFakeLLM(t, reply{status: 401, body: body}, text("never sent"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	_, err := ask(a, "reader", "say hi", false, nil)
	e := registry.AsError(err)
	if e == nil || strings.Contains(e.Message, testKey[:len(testKey)/2]) {
		t.Fatalf("a part of the key survived: %+v", e)
	}
}
