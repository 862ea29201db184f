package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/testenv"
)

// scriptedLLM is an OpenAI-compatible endpoint over real HTTP whose
// answers come from a function of the asker (the participant whose system
// prompt the run wrote, or "selector") and the request.
type scriptedLLM struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex // guards asked and reqs
	asked  map[string]int
	reqs   map[string][]openai.ChatCompletionRequest
	answer func(ctx context.Context, who string, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool)
}

var askerRE = regexp.MustCompile(`You are ([a-z0-9_-]+), one of the participants`)

func newScriptedLLM(t *testing.T, answer func(ctx context.Context, who string, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool)) *scriptedLLM {
	s := &scriptedLLM{t: t, asked: map[string]int{}, reqs: map[string][]openai.ChatCompletionRequest{}, answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scriptedLLM) URL() string { return s.srv.URL + "/v1" }

func (s *scriptedLLM) serve(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, 400)
		return
	}
	who := "?"
	if sys := req.Messages[0].Content; strings.Contains(sys, "You choose who speaks next") {
		who = "selector"
	} else if m := askerRE.FindStringSubmatch(sys); m != nil {
		who = m[1]
	}
	s.mu.Lock()
	n := s.asked[who]
	s.asked[who]++
	s.reqs[who] = append(s.reqs[who], req)
	s.mu.Unlock()
	msg, ok := s.answer(r.Context(), who, n, req)
	if !ok {
		if r.Context().Err() == nil {
			s.t.Errorf("scripted LLM: no answer for %s's request %d", who, n+1)
		}
		http.Error(w, `{"error":{"message":"script has no answer"}}`, 500)
		return
	}
	msg.Role = "assistant"
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "x", Object: "chat.completion", Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: "stop"}},
		Usage:   openai.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}})
}

func (s *scriptedLLM) requests(who string) []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.reqs[who]...)
}

func text(s string) openai.ChatCompletionMessage { return openai.ChatCompletionMessage{Content: s} }

func fnCall(name string, args any) openai.ChatCompletionMessage {
	b, _ := json.Marshal(args)
	return openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{ID: "call-x", Type: "function",
		Function: openai.FunctionCall{Name: name, Arguments: string(b)}}}}
}

type runSummary struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	StopReason string `json:"stop_reason"`
	StopDetail string `json:"stop_detail"`
	Transcript []struct {
		Sender  string `json:"sender"`
		Content string `json:"content"`
	} `json:"transcript"`
	Usage map[string]struct {
		Total int `json:"total_tokens"`
		Calls int `json:"calls"`
	} `json:"usage"`
}

func (s runSummary) speakers() []string {
	var out []string
	for _, m := range s.Transcript {
		out = append(out, m.Sender)
	}
	return out
}

func startRun(t *testing.T, d *testenv.Daemon, flow, input string) string {
	t.Helper()
	code, body := d.Do(t, "POST", "/v1/runs", map[string]string{"flow": flow, "input": input})
	var sum runSummary
	if code != 201 || json.Unmarshal(body, &sum) != nil || sum.ID == "" {
		t.Fatalf("start run: %d %s\n%s", code, body, d.Logs())
	}
	return sum.ID
}

// followRun reads the run's events from the daemon until the stop and
// returns the kinds seen, then the summary.
func followRun(t *testing.T, d *testenv.Daemon, id string) ([]string, runSummary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.URL+"/v1/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("events: %v\n%s", err, d.Logs())
	}
	defer resp.Body.Close()
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 || kinds[len(kinds)-1] != "stop" {
		t.Fatalf("the event stream ended without a stop: %v\n%s", kinds, d.Logs())
	}
	code, body := d.Do(t, "GET", "/v1/runs/"+id, nil)
	var sum runSummary
	if code != 200 || json.Unmarshal(body, &sum) != nil {
		t.Fatalf("get run: %d %s", code, body)
	}
	return kinds, sum
}

// TestRunResumesAfterSIGKILL kills the daemon while a run waits for the
// model after a tool call, starts it again on the same state folder, and
// checks the run finishes without making the logged call again: the
// counting tool writes to a file that outlives both daemons.
func TestRunResumesAfterSIGKILL(t *testing.T) {
	dir := t.TempDir()
	skills, state, counter := filepath.Join(dir, "skills"), filepath.Join(dir, "state"), filepath.Join(dir, "count.txt")
	if _, err := testenv.Install(skills, testenv.Version{Skill: "counter", Version: "1.0.0", Binary: skillBin,
		Env: map[string]string{"TESTSKILL_COUNTER": counter}}); err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(dir, "agents.yaml")
	writeFile(t, agents, "default: worker\nprofiles:\n  worker: {system: You count., mode: full, skills: [counter]}\n")
	writeFile(t, filepath.Join(dir, "flows", "counting.yaml"),
		"participants: [{name: worker, profile: worker}]\ntermination: {max_rounds: 1}\n")

	waiting := make(chan struct{}) // the model got the request after the tool result
	llm := newScriptedLLM(t, func(ctx context.Context, who string, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool) {
		switch n {
		case 0:
			return fnCall("counter__count", map[string]any{}), true
		case 1: // the first daemon dies while this request waits
			close(waiting)
			<-ctx.Done()
			return openai.ChatCompletionMessage{}, false
		case 2:
			last := req.Messages[len(req.Messages)-1]
			return text("the tool said " + last.Content), true
		}
		return openai.ChatCompletionMessage{}, false
	})
	args := []string{"--skills", skills, "--state-dir", state, "--agents", agents, "--grace", "2s",
		"--llm-base-url", llm.URL(), "--llm-model", "scripted"}
	d := testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d)
	id := startRun(t, d, "counting", "count once")
	select {
	case <-waiting:
	case <-time.After(60 * time.Second):
		t.Fatalf("the model was never asked a second time\n%s", d.Logs())
	}
	logFile := filepath.Join(state, "runs", id, "log.jsonl")
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), `"kind":"tool_result"`) {
		t.Fatalf("the model was called before the tool result was logged:\n%s", b)
	}
	d.Kill()

	d = testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d)
	_, sum := followRun(t, d, id)
	if sum.StopReason != "max_rounds" || len(sum.Transcript) != 1 || sum.Transcript[0].Content != `the tool said {"count":1}` {
		t.Fatalf("resumed run: %+v\n%s", sum, d.Logs())
	}
	if b, _ := os.ReadFile(counter); strings.Count(string(b), "\n") != 1 {
		t.Errorf("the counting tool was called %d times; a logged call must never be made again", strings.Count(string(b), "\n"))
	}
	if u := sum.Usage["worker"]; u.Calls != 2 {
		t.Errorf("usage %+v: the interrupted model call was never answered, so two are logged", u)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The coder's programs in the code-interpreter story.
const (
	coderTypo  = "```js\nconst fib = n => { let a = 0, b = 1; for (let i = 0; i < n; i++) [a, b] = [b, a + b]; return a };\nconsole.log(fibb(39))\n```"
	coderRight = "```js\nconst fib = n => { let a = 0, b = 1; for (let i = 0; i < n; i++) [a, b] = [b, a + b]; return a };\nconsole.log(fib(39))\n```"
)

func review(ok bool, comment string) openai.ChatCompletionMessage {
	return fnCall("review", map[string]any{"code_present": true, "logic_correct": ok, "safe_to_run": true, "approved": ok, "comment": comment})
}

// adminAnswer reads the runner's stdout from the last message the admin
// sees, so the final answer holds what the real coderunner computed.
func adminAnswer(req openai.ChatCompletionRequest) openai.ChatCompletionMessage {
	last := req.Messages[len(req.Messages)-1].Content
	var res struct {
		Stdout string `json:"stdout"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(last, "runner: ")), &res)
	return text(fmt.Sprintf("The 39th Fibonacci number is %s. TERMINATE", strings.TrimSpace(res.Stdout)))
}

func startExampleDaemon(t *testing.T, llm *scriptedLLM) *testenv.Daemon {
	t.Helper()
	root := testenv.ModuleRoot()
	return startDaemon(t, exampleTree(t), "--agents", filepath.Join(root, "examples/flows/profiles/code-interpreter.yaml"),
		"--flows", filepath.Join(root, "examples/flows"), "--llm-base-url", llm.URL(), "--llm-model", "scripted")
}

// TestCodeInterpreterGraph runs examples/flows/code-interpreter.yaml, the
// workflow graph, through the real coderunner skill: the reviewer first
// answers in text (asked again), rejects a program, approves one that
// fails at run time (runner → coder), then the right one (runner → admin).
func TestCodeInterpreterGraph(t *testing.T) {
	llm := newScriptedLLM(t, func(_ context.Context, who string, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool) {
		script := map[string][]func() openai.ChatCompletionMessage{
			"admin": {func() openai.ChatCompletionMessage {
				return text("Coder: print the 39th Fibonacci number (fib(0) = 0).")
			},
				func() openai.ChatCompletionMessage { return adminAnswer(req) }},
			"coder": {func() openai.ChatCompletionMessage { return text("```js\nconsole.log(fib(39)\n```") },
				func() openai.ChatCompletionMessage { return text(coderTypo) },
				func() openai.ChatCompletionMessage { return text(coderRight) }},
			"reviewer": {func() openai.ChatCompletionMessage { return text("It has a syntax error.") },
				func() openai.ChatCompletionMessage { return review(false, "missing parenthesis and no fib") },
				func() openai.ChatCompletionMessage { return review(true, "") },
				func() openai.ChatCompletionMessage { return review(true, "fixed") }},
		}[who]
		if n >= len(script) {
			return openai.ChatCompletionMessage{}, false
		}
		return script[n](), true
	})
	d := startExampleDaemon(t, llm)
	id := startRun(t, d, "code-interpreter", "Compute the 39th Fibonacci number.")
	kinds, sum := followRun(t, d, id)
	speakers := sum.speakers()
	want := "admin,coder,reviewer,coder,reviewer,runner,coder,reviewer,runner,admin"
	if sum.StopReason != "text_mention" || strings.Join(speakers, ",") != want {
		t.Fatalf("stop %q (%s), speakers %v; want text_mention after %s\n%s", sum.StopReason, sum.StopDetail, speakers, want, d.Logs())
	}
	if got := sum.Transcript[len(sum.Transcript)-1].Content; !strings.Contains(got, "63245986") {
		t.Errorf("final answer %q, want 63245986", got)
	}
	if !strings.Contains(sum.Transcript[5].Content, `"ok":false`) || !strings.Contains(sum.Transcript[8].Content, `"stdout":"63245986`) {
		t.Errorf("runner messages: %s / %s", sum.Transcript[5].Content, sum.Transcript[8].Content)
	}
	if n := len(llm.requests("reviewer")); n != 4 {
		t.Errorf("reviewer asked %d times, want 4 (one retry of a text answer)", n)
	}
	if c := strings.Count(strings.Join(kinds, ","), "transition"); c != 9 {
		t.Errorf("%d transitions logged, want 9", c)
	}
	if u := sum.Usage["reviewer"]; u.Calls != 4 || u.Total != 480 {
		t.Errorf("reviewer usage %+v", u)
	}
}

// TestCodeInterpreterSelector runs examples/flows/code-interpreter-selector.yaml:
// the admin model picks every speaker through select_speaker, once naming
// someone who is not a candidate (asked again, the reason logged).
func TestCodeInterpreterSelector(t *testing.T) {
	picks := []map[string]string{
		{"speaker": "coder", "reason": "the task needs code"},
		{"speaker": "coder", "reason": "the coder again"}, // the last speaker is no candidate: asked again
		{"speaker": "reviewer", "reason": "code must be reviewed before it runs"},
		{"speaker": "runner", "reason": "the reviewer approved"},
		{"speaker": "admin", "reason": "the runner printed the answer"},
	}
	llm := newScriptedLLM(t, func(_ context.Context, who string, n int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool) {
		switch {
		case who == "selector" && n < len(picks):
			return fnCall("select_speaker", picks[n]), true
		case who == "admin" && n == 0:
			return text("Coder: print the 39th Fibonacci number."), true
		case who == "admin" && n == 1:
			return adminAnswer(req), true
		case who == "coder" && n == 0:
			return text(coderRight), true
		case who == "reviewer" && n == 0:
			return review(true, ""), true
		}
		return openai.ChatCompletionMessage{}, false
	})
	d := startExampleDaemon(t, llm)
	id := startRun(t, d, "code-interpreter-selector", "Compute the 39th Fibonacci number.")
	_, sum := followRun(t, d, id)
	speakers := sum.speakers()
	if sum.StopReason != "text_mention" || strings.Join(speakers, ",") != "admin,coder,reviewer,runner,admin" {
		t.Fatalf("stop %q (%s), speakers %v\n%s", sum.StopReason, sum.StopDetail, speakers, d.Logs())
	}
	if got := sum.Transcript[4].Content; !strings.Contains(got, "63245986") {
		t.Errorf("final answer %q", got)
	}
	// The enum offered after the coder spoke holds everyone but the coder.
	var params struct {
		Properties struct {
			Speaker struct {
				Enum []string `json:"enum"`
			} `json:"speaker"`
		} `json:"properties"`
	}
	reqs := llm.requests("selector")
	raw, _ := json.Marshal(reqs[1].Tools[0].Function.Parameters)
	json.Unmarshal(raw, &params)
	if got := strings.Join(params.Properties.Speaker.Enum, ","); got != "admin,reviewer,runner" {
		t.Errorf("enum after the coder: %s", got)
	}
	code, body := d.Do(t, "GET", "/v1/runs/"+id+"/events", nil)
	if code != 200 || !strings.Contains(string(body), "selector: code must be reviewed before it runs") {
		t.Errorf("the selector's reason is not in the log: %d", code)
	}
	if u := sum.Usage["selector:admin"]; u.Calls != 5 {
		t.Errorf("selector usage %+v, want 5 calls", u)
	}
}

// TestFlowsReloadAndAuth: the runs routes sit behind the same tokens as
// the rest (the invoke token may use runs, not reload flows), and the
// flows folder reloads on SIGHUP and POST /v1/flows/reload; a bad file
// changes nothing and every problem is reported.
func TestFlowsReloadAndAuth(t *testing.T) {
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.yaml")
	writeFile(t, agents, "default: a\nprofiles:\n  a: {system: You answer.}\n")
	flows := filepath.Join(dir, "flows")
	writeFile(t, filepath.Join(flows, "one.yaml"), "participants: [{name: a, profile: a}]\n")
	admin, invoke := filepath.Join(dir, "admin"), filepath.Join(dir, "invoke")
	os.WriteFile(admin, []byte("admin-token-0123456789abcdef\n"), 0o600)
	os.WriteFile(invoke, []byte("invoke-token-0123456789abcdef\n"), 0o600)
	d := startDaemonNoWait(t, t.TempDir(), "--agents", agents, "--token-file", admin, "--invoke-token-file", invoke)
	if code, body := d.Do(t, "GET", "/v1/runs", nil); code != 401 {
		t.Errorf("GET /v1/runs without a token: %d %s", code, body)
	}
	d.Token = "invoke-token-0123456789abcdef"
	waitReady(t, d)
	flowNames := func() string {
		code, body := d.Do(t, "GET", "/v1/flows", nil)
		var out struct {
			Flows []struct{ Name string } `json:"flows"`
		}
		if code != 200 || json.Unmarshal(body, &out) != nil {
			t.Fatalf("GET /v1/flows: %d %s", code, body)
		}
		var names []string
		for _, f := range out.Flows {
			names = append(names, f.Name)
		}
		return strings.Join(names, ",")
	}
	if got := flowNames(); got != "one" {
		t.Fatalf("flows %q, want one (flows/ beside --agents)", got)
	}
	code, body := d.Do(t, "POST", "/v1/runs", map[string]string{"flow": "two", "input": "x"})
	wantError(t, "unknown flow", code, body, 404, "unknown_flow")
	code, body = d.Do(t, "POST", "/v1/flows/reload", nil)
	wantError(t, "reload with the invoke token", code, body, 403, "forbidden")

	writeFile(t, filepath.Join(flows, "two.yaml"), "participants: [{name: b, profile: a}]\n")
	d.Signal(syscall.SIGHUP)
	if !testenv.WaitFor(20*time.Second, func() bool { return flowNames() == "one,two" }) {
		t.Fatalf("SIGHUP did not reload the flows: %q\n%s", flowNames(), d.Logs())
	}
	writeFile(t, filepath.Join(flows, "bad.yaml"), "participants: [{name: c, profile: ghost}, {name: c, profile: a}]\n")
	d.Token = "admin-token-0123456789abcdef"
	code, body = d.Do(t, "POST", "/v1/flows/reload", nil)
	wantError(t, "bad reload", code, body, 422, "invalid_flows")
	for _, want := range []string{`no agent profile named \"ghost\"`, `\"c\" is already the name of another participant`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the reload's answer lacks %s: %s", want, body)
		}
	}
	if got := flowNames(); got != "one,two" {
		t.Errorf("flows after a bad reload: %q, want the old ones", got)
	}
}
