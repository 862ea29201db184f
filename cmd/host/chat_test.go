package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/agent"
)

var hostBin, testSkillBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "host-test-")
	if err != nil {
		panic(err)
	}
	code := 1
	if hostBin, err = testenv.Build(dir, "./cmd/host"); err == nil {
		testSkillBin, err = testenv.Build(dir, "./internal/testskill")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	http.DefaultClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// fakeModel is an OpenAI-compatible endpoint the daemon under test talks
// to over real HTTP. It answers from a script, streaming when asked.
type fakeModel struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex // guards script and got
	script []openai.ChatCompletionMessage
	got    []modelRequest
}

type modelRequest struct {
	auth string
	raw  string
	req  openai.ChatCompletionRequest
}

func newFakeModel(t *testing.T, script ...openai.ChatCompletionMessage) *fakeModel {
	f := &fakeModel{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req openai.ChatCompletionRequest
		json.Unmarshal(raw, &req)
		f.mu.Lock()
		n := len(f.got)
		f.got = append(f.got, modelRequest{auth: r.Header.Get("Authorization"), raw: string(raw), req: req})
		if n >= len(f.script) {
			f.mu.Unlock()
			t.Errorf("fake model: request %d past the script: %s", n+1, raw)
			http.Error(w, `{"error":{"message":"script exhausted"}}`, 500)
			return
		}
		msg := f.script[n]
		f.mu.Unlock()
		finish := openai.FinishReasonStop
		if len(msg.ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Model: req.Model,
				Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(d openai.ChatCompletionStreamChoiceDelta, fr openai.FinishReason) {
			b, _ := json.Marshal(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: d, FinishReason: fr}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		for _, word := range strings.SplitAfter(msg.Content, " ") {
			if word != "" {
				send(openai.ChatCompletionStreamChoiceDelta{Content: word}, "")
			}
		}
		for i, c := range msg.ToolCalls {
			idx := i
			half := len(c.Function.Arguments) / 2
			send(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &idx, ID: c.ID, Type: "function",
				Function: openai.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments[:half]}}}}, "")
			send(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &idx,
				Function: openai.FunctionCall{Arguments: c.Function.Arguments[half:]}}}}, "")
		}
		send(openai.ChatCompletionStreamChoiceDelta{}, finish)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) requests() []modelRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]modelRequest(nil), f.got...)
}

func say(s string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", Content: s}
}

func callTool(id, name, args string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: id, Type: "function",
		Function: openai.FunctionCall{Name: name, Arguments: args}}}}
}

// skillsTree installs the test skill as alpha 1.0.0.
func skillsTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	fileKey = "sk-from-key-file-0123456789"
	envKey  = "sk-from-env-9876543210"
)

// TestChatEndToEnd runs a real daemon with a real skill against the fake
// model: POST /v1/chat as JSON, then `host chat` as a user would run it.
func TestChatEndToEnd(t *testing.T) {
	f := newFakeModel(t,
		callTool("c1", "alpha__echo", `{"msg":"hello"}`), say("Echo said hello."),
		callTool("c2", "alpha__echo", `{"msg":"from the cli"}`), say("The CLI got it."),
	)
	agents := writeFile(t, "agents.yaml", "default: reader\nprofiles:\n  reader:\n    system: Test agent.\n    skills: [alpha]\n", 0o644)
	keyFile := writeFile(t, "key", fileKey+"\n", 0o600)
	d := testenv.StartDaemon(t, hostBin, []string{"OPENAI_API_KEY=" + envKey},
		"--skills", skillsTree(t), "--watch=false", "--llm-base-url", f.srv.URL+"/v1", "--llm-model", "fake-model",
		"--llm-key-file", keyFile, "--agents", agents)

	status, body := d.Do(t, "POST", "/v1/chat", map[string]any{"messages": []map[string]string{{"role": "user", "content": "echo hello"}}})
	if status != 200 {
		t.Fatalf("POST /v1/chat: %d %s", status, body)
	}
	var resp agent.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Answer != "Echo said hello." || resp.Profile != "reader" || len(resp.ToolCalls) != 1 || !resp.ToolCalls[0].OK ||
		resp.ToolCalls[0].Tool != "alpha.echo" || resp.Skills["alpha"] != "1.0.0" {
		t.Fatalf("response = %s", body)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d", len(reqs))
	}
	for _, r := range reqs {
		if r.auth != "Bearer "+fileKey {
			t.Fatalf("Authorization = %q; the key file must win over the environment", r.auth)
		}
		var names []string
		for _, tool := range r.req.Tools {
			names = append(names, tool.Function.Name)
		}
		// The read-only profile sees the read-only tools of its skill,
		// the best match first, and never sleep, crash, spawn or fail.
		if r.req.Model != "fake-model" || strings.Join(names, ",") != "alpha__echo,alpha__big,alpha__env" {
			t.Fatalf("request = %s", r.raw)
		}
	}
	if tool := reqs[1].req.Messages[3]; tool.Role != "tool" || tool.ToolCallID != "c1" || !strings.Contains(tool.Content, `"msg":"hello"`) {
		t.Fatalf("tool message = %+v", tool)
	}

	cmd := exec.Command(hostBin, "chat", "--profile", "reader", "echo from the cli")
	cmd.Env = append(os.Environ(), "SKILLHOST_ADDR="+d.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("host chat: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "The CLI got it.\n" {
		t.Fatalf("stdout = %q\nstderr:\n%s", stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"· reader on fake-model, tools: alpha__echo, alpha__big, alpha__env",
		`→ alpha.echo {"msg":"from the cli"}`,
		"← alpha.echo ok alpha@1.0.0",
		"(reader: 2 steps, 1 tool calls, skills alpha@1.0.0)",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if r := f.requests(); len(r) != 4 || !r[2].req.Stream || !strings.Contains(r[3].req.Messages[3].Content, "from the cli") {
		t.Fatalf("streamed requests = %+v", r)
	}
	if _, m := d.Do(t, "GET", "/metrics", nil); !strings.Contains(string(m), "skillhost_agent_runs_total 2") ||
		!strings.Contains(string(m), "skillhost_agent_tool_calls_total 2") {
		t.Errorf("agent counters missing from /metrics:\n%s", grepLines(string(m), "skillhost_agent_"))
	}
	logs := d.Logs()
	if !strings.Contains(logs, "agent loop ready") {
		t.Errorf("no startup line for the agent loop:\n%s", logs)
	}
	for _, key := range []string{fileKey, envKey} {
		if strings.Contains(logs, key) {
			t.Fatalf("the daemon logged an API key:\n%s", logs)
		}
	}
}

// TestChatTokenAndUnconfigured: a daemon behind a token and without a model.
func TestChatTokenAndUnconfigured(t *testing.T) {
	token := "tok-0123456789abcdef0123"
	tokenFile := writeFile(t, "token", token+"\n", 0o600)
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", skillsTree(t), "--watch=false", "--token-file", tokenFile)
	d.Token = token
	status, body := d.Do(t, "POST", "/v1/chat", `{"messages":[{"role":"user","content":"hi"}]}`)
	if status != 503 || !strings.Contains(string(body), `"code":"agent_unconfigured"`) || !strings.Contains(string(body), "--llm-model") {
		t.Fatalf("unconfigured: %d %s", status, body)
	}
	// The one error shape for unknown fields too.
	status, body = d.Do(t, "POST", "/v1/chat", `{"messages":[{"role":"user","content":"hi"}],"model":"x"}`)
	if status != 400 || !strings.Contains(string(body), `unknown field \"model\"`) {
		t.Fatalf("unknown field: %d %s", status, body)
	}

	var stdout, stderr bytes.Buffer
	t.Setenv("SKILLHOST_TOKEN", "")
	if code := run([]string{"chat", "--addr", d.URL, "hi"}, &stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "unauthorized (401)") {
		t.Fatalf("no token: exit %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"chat", "--addr", d.URL, "--token-file", tokenFile, "hi"}, &stdout, &stderr); code != exitFailure ||
		!strings.Contains(stderr.String(), "agent_unconfigured (503)") {
		t.Fatalf("token file: exit %d, stderr %s", code, stderr.String())
	}
	stderr.Reset()
	t.Setenv("SKILLHOST_TOKEN", token)
	t.Setenv("SKILLHOST_ADDR", d.Addr) // host:port, no scheme
	if code := run([]string{"chat", "hi"}, &stdout, &stderr); code != exitFailure || !strings.Contains(stderr.String(), "agent_unconfigured") {
		t.Fatalf("token from env: exit %d, stderr %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout = %q", stdout.String())
	}
}

func TestChatUsageAndUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"chat"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "no question") {
		t.Fatalf("no question: exit %d, %s", code, stderr.String())
	}
	// Nothing listens on a port that was just closed.
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	stderr.Reset()
	if code := run([]string{"chat", "--addr", addr, "hello"}, &stdout, &stderr); code != exitUnreachable || !strings.Contains(stderr.String(), "cannot reach") {
		t.Fatalf("unreachable: exit %d, %s", code, stderr.String())
	}
}

func TestServeRefusesBadAgentsFile(t *testing.T) {
	bad := writeFile(t, "agents.json", `{"profiles": {"a": {"mode": "admin", "delegates": ["ghost"]}}}`, 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"serve", "--skills", t.TempDir(), "--listen", "127.0.0.1:0", "--state-dir", t.TempDir(), "--agents", bad}, &stdout, &stderr)
	if code != exitFailure {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{bad, `profiles.a.mode: must be "read_only" or "full"`, `profiles.a.delegates[0]: no profile named "ghost"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestWorkedExample is the question of docs/agent.md, on the example
// skills and examples/agents.json, with the model scripted: the researcher
// hands the policy look-up to the policy-officer, then computes with calc.
func TestWorkedExample(t *testing.T) {
	root := t.TempDir()
	if err := testenv.BuildExamples(root); err != nil {
		t.Fatal(err)
	}
	f := newFakeModel(t,
		callTool("call_1", "delegate_policy-officer", `{"task":"按公司差旅报销制度，总监在上海出差，住宿费每晚的报销上限是多少？请引用条款。"}`),
		callTool("call_2", "policy__search_policies", `{"query":"住宿费报销标准 总监 上海","limit":3}`),
		say("依据《差旅报销制度》第五条：上海属一线城市，每晚上限 600 元；总监及以上人员上浮 30%，即每晚 780 元。"),
		callTool("call_3", "calc__evaluate", `{"expression":"600 * 1.3 * 3"}`),
		say("住宿费最多可报销 2340 元（600 元 × 1.3 × 3 晚），依据《差旅报销制度》第五条。"),
	)
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", root, "--watch=false", "--llm-base-url", f.srv.URL+"/v1",
		"--llm-model", "qwen2.5", "--agents", filepath.Join(testenv.ModuleRoot(), "examples", "agents.json"))
	status, body := d.Do(t, "POST", "/v1/chat", map[string]any{"profile": "researcher",
		"messages": []map[string]string{{"role": "user", "content": "我是总监，下周去上海出差 3 晚。住宿费最多能报销多少？"}}})
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var resp agent.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Answer, "2340") || resp.Counters.Delegations != 1 || len(resp.ToolCalls) != 3 ||
		resp.Skills["calc"] == "" || resp.Skills["policy"] == "" {
		t.Fatalf("response = %s", body)
	}
	reqs := f.requests()
	names := func(r modelRequest) string {
		var out []string
		for _, tool := range r.req.Tools {
			out = append(out, tool.Function.Name)
		}
		return strings.Join(out, ",")
	}
	// The researcher sees calc and textkit, the delegate, and search_tools
	// (it may use more of calc and textkit than max_tools offered); the
	// policy-officer only the tools tagged 制度/policy, and no delegate.
	if got := names(reqs[0]); !strings.Contains(got, "calc__evaluate") || strings.Contains(got, "policy__") || !strings.HasSuffix(got, "delegate_policy-officer,search_tools") {
		t.Fatalf("researcher tools = %s", got)
	}
	if got := names(reqs[1]); got != "policy__search_policies,policy__get_clause" {
		t.Fatalf("policy-officer tools = %s", got)
	}
	if clause := reqs[2].req.Messages[3].Content; !strings.Contains(clause, "《差旅报销制度》第五条") || !strings.Contains(clause, "上浮 30%") {
		t.Fatalf("policy result = %s", clause)
	}
	if calc := reqs[4].req.Messages[len(reqs[4].req.Messages)-1].Content; calc != `{"result":2340,"formatted":"2340"}` {
		t.Fatalf("calc result = %s", calc)
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
