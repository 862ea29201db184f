package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
)

// testKey is the API key the tests configure. It is also in the test
// process's environment as OPENAI_API_KEY when the skills start, so that a
// test can prove it never reaches them.
const testKey = "sk-test-7f3a9c0d1e2b4a68"

// testReg serves two real testskill processes, alpha and beta, for every
// test: starting skills once keeps the suite fast, and no test changes them.
var testReg *registry.Registry

func TestMain(m *testing.M) {
	code, err := runTests(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runTests(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "agent-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	bin, err := testenv.Build(dir, "./internal/testskill")
	if err != nil {
		return 0, err
	}
	root := dir + "/skills"
	for _, skill := range []string{"alpha", "beta"} {
		if _, err := testenv.Install(root, testenv.Version{Skill: skill, Version: "1.0.0", Binary: bin}); err != nil {
			return 0, err
		}
	}
	os.Setenv("OPENAI_API_KEY", testKey)
	testReg = registry.New(registry.Config{})
	ld, err := loader.New(loader.Config{Skills: root, Registry: testReg, Grace: 2 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})})
	if err != nil {
		return 0, err
	}
	defer ld.Close(context.Background())
	if err := ld.Start(context.Background()); err != nil {
		return 0, err
	}
	if n := testReg.Snapshot().Len(); n != 14 {
		return 0, fmt.Errorf("expected 14 tools from alpha and beta, have %d", n)
	}
	return m.Run(), nil
}

// fakeLLM is an OpenAI-compatible chat completions endpoint, over real
// HTTP, that answers from a script and records every request.
type fakeLLM struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex // guards the fields below
	script []reply
	reqs   []recorded
}

type recorded struct {
	auth string
	raw  []byte
	req  openai.ChatCompletionRequest
}

// reply is one scripted answer. With status >= 400, or with a body, the body
// is sent as is; otherwise msg is the answer, streamed in pieces when the request streams
// (or as chunks, when given).
type reply struct {
	status int
	body   string
	header map[string]string
	msg    openai.ChatCompletionMessage
	finish openai.FinishReason
	chunks []string // raw stream data lines, sent as given
	// plain answers a streamed request with one JSON completion, as servers
	// and proxies that ignore "stream": true do.
	plain bool
	// wait, when set, is waited for before answering.
	wait <-chan struct{}
	// before, when set, runs before the answer is sent.
	before func()
}

func text(s string) reply {
	return reply{msg: openai.ChatCompletionMessage{Role: "assistant", Content: s}, finish: openai.FinishReasonStop}
}

func calls(tcs ...openai.ToolCall) reply {
	return reply{msg: openai.ChatCompletionMessage{Role: "assistant", ToolCalls: tcs}, finish: openai.FinishReasonToolCalls}
}

func tc(id, name, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

func failWith(status int, message string) reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "test_error"}})
	return reply{status: status, body: string(b)}
}

func newFakeLLM(t *testing.T, script ...reply) *fakeLLM {
	f := &fakeLLM{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the base URL to configure, as for any OpenAI-compatible server.
func (f *fakeLLM) URL() string { return f.srv.URL + "/v1" }

func (f *fakeLLM) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("fake LLM: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		f.t.Errorf("fake LLM: request is not a chat completion request: %v\n%s", err, raw)
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, recorded{auth: r.Header.Get("Authorization"), raw: raw, req: req})
	var rep reply
	ok := n < len(f.script)
	if ok {
		rep = f.script[n]
	}
	f.mu.Unlock()
	if !ok {
		f.t.Errorf("fake LLM: request %d is past the script (%d replies)\n%s", n+1, len(f.script), raw)
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
		return
	}
	if rep.before != nil {
		rep.before()
	}
	if rep.wait != nil {
		select {
		case <-rep.wait:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status >= 400 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
		return
	}
	if rep.body != "" { // a raw 2xx body, sent as JSON whatever the request asked
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, rep.body)
		return
	}
	if !req.Stream || rep.plain {
		writeTestJSON(w, openai.ChatCompletionResponse{
			ID: fmt.Sprintf("chatcmpl-%d", n), Object: "chat.completion", Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{Message: rep.msg, FinishReason: rep.finish}},
			Usage:   openai.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	lines := rep.chunks
	if lines == nil {
		lines = streamPieces(rep)
	}
	for _, l := range lines {
		fmt.Fprintf(w, "data: %s\n\n", l)
		w.(http.Flusher).Flush()
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// streamPieces cuts a reply the way OpenAI streams: content in small
// pieces; each tool call's id and name first, then its arguments in three
// pieces, the calls interleaved; then the finish reason, then usage.
func streamPieces(rep reply) []string {
	var out []string
	add := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
		b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: "chunk", Object: "chat.completion.chunk",
			Choices: []openai.ChatCompletionStreamChoice{{Delta: d, FinishReason: finish}}})
		out = append(out, string(b))
	}
	add(openai.ChatCompletionStreamChoiceDelta{Role: "assistant"}, "")
	for _, piece := range cut(rep.msg.Content, 3) {
		add(openai.ChatCompletionStreamChoiceDelta{Content: piece}, "")
	}
	for i, c := range rep.msg.ToolCalls {
		add(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: intp(i), ID: c.ID, Type: "function",
			Function: openai.FunctionCall{Name: c.Function.Name}}}}, "")
	}
	for round := 0; round < 3; round++ {
		for i, c := range rep.msg.ToolCalls {
			pieces := cutN(c.Function.Arguments, 3)
			add(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: intp(i),
				Function: openai.FunctionCall{Arguments: pieces[round]}}}}, "")
		}
	}
	add(openai.ChatCompletionStreamChoiceDelta{}, rep.finish)
	b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: "chunk", Object: "chat.completion.chunk",
		Choices: []openai.ChatCompletionStreamChoice{}, Usage: &openai.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}})
	return append(out, string(b))
}

func intp(i int) *int { return &i }

// cut splits s into pieces of at most n runes.
func cut(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

// cutN splits s into exactly n pieces (some may be empty), on rune
// boundaries: each stream chunk is a JSON document, so a piece is always
// whole characters.
func cutN(s string, n int) []string {
	r := []rune(s)
	out := make([]string, n)
	size := (len(r) + n - 1) / n
	for i := range out {
		lo, hi := min(i*size, len(r)), min((i+1)*size, len(r))
		out[i] = string(r[lo:hi])
	}
	return out
}

func writeTestJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (f *fakeLLM) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// request returns the i-th request (0-based), failing the test if absent.
func (f *fakeLLM) request(i int) recorded {
	f.t.Helper()
	reqs := f.requests()
	if i >= len(reqs) {
		f.t.Fatalf("the fake LLM got %d requests; wanted request %d", len(reqs), i+1)
	}
	return reqs[i]
}

// field returns one top-level field of a recorded request body, decoded.
func (r recorded) field(t *testing.T, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.raw, &m); err != nil {
		t.Fatal(err)
	}
	return m[name]
}

// jsonEqual fails the test unless got and want encode to the same JSON
// value. want may be a Go value or a JSON string.
func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	g, w := normJSON(t, got), normJSON(t, want)
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.MarshalIndent(g, "", "  ")
		wb, _ := json.MarshalIndent(w, "", "  ")
		t.Fatalf("%s differs\n got: %s\nwant: %s", what, gb, wb)
	}
}

func normJSON(t *testing.T, v any) any {
	t.Helper()
	var b []byte
	switch x := v.(type) {
	case string:
		b = []byte(x)
	case []byte:
		b = x
	case json.RawMessage:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var out any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return out
}

// toolsPayload is what the tools field must hold for the named tools.
func toolsPayload(t *testing.T, names ...string) []openai.Tool {
	t.Helper()
	snap := testReg.Snapshot()
	out := make([]openai.Tool, 0, len(names))
	for _, n := range names {
		tool, ok := snap.Tool(n)
		if !ok {
			t.Fatalf("no tool %s", n)
		}
		out = append(out, openaitools.Tool(tool))
	}
	return out
}

// toolNames lists the function names of a recorded request's tools.
func (r recorded) toolNames() []string {
	out := []string{}
	for _, tool := range r.req.Tools {
		out = append(out, tool.Function.Name)
	}
	return out
}

// testProfiles parses a profiles document for a test.
func testProfiles(t *testing.T, doc string) *Profiles {
	t.Helper()
	ps, err := ParseProfiles([]byte(doc), "json")
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// newTestAgent returns an agent on f with profiles doc (JSON) and fast
// retries; its log goes to the returned buffer.
func newTestAgent(t *testing.T, f *fakeLLM, doc string, mod func(*Config)) (*Agent, *testenv.SyncBuffer) {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	cfg := Config{
		Registry: testReg, Profiles: testProfiles(t, doc), BaseURL: f.URL(), APIKey: testKey, Model: "test-model",
		HTTPClient: f.srv.Client(), Retry: RetryPolicy{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: logs}),
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), testKey) {
			t.Errorf("the API key was logged:\n%s", logs.String())
		}
	})
	return a, logs
}

// ask runs one user question.
func ask(a *Agent, profile, question string, stream bool, emit func(Event)) (*Response, error) {
	return a.Run(context.Background(), Request{Profile: profile, Messages: []Message{{Role: "user", Content: question}}, Stream: stream}, emit)
}

// events collects a run's events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) list() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.evs...)
}

func invoke(t *testing.T, tool, args string) string {
	t.Helper()
	res, err := testReg.Invoke(context.Background(), tool, []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Result)
}
