package agent

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/pkg/registry"
)

// serveAgent serves a's handler on a real HTTP server, as the daemon does.
func serveAgent(t *testing.T, a *Agent, mod func(*http.Server)) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat", a.Handler())
	srv := httptest.NewUnstartedServer(mux)
	if mod != nil {
		mod(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

type sseEvent struct {
	name string
	data string
}

// readSSE parses an event stream, skipping comments (the heartbeat).
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func decodeError(t *testing.T, b []byte) registry.Error {
	t.Helper()
	var body struct {
		Error *registry.Error `json:"error"`
	}
	if err := json.Unmarshal(b, &body); err != nil || body.Error == nil {
		t.Fatalf("not an error body: %s", b)
	}
	return *body.Error
}

func TestHandlerJSON(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha__echo", `{"msg":"hi"}`)), text("It said hi."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	srv := serveAgent(t, a, nil)
	resp, b := post(t, srv, "application/json", `{"profile":"reader","messages":[{"role":"user","content":"echo hi"}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out Response
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Answer != "It said hi." || len(out.ToolCalls) != 1 || out.ToolCalls[0].Tool != "alpha.echo" || out.Skills["alpha"] != "1.0.0" {
		t.Fatalf("response = %s", b)
	}
}

func TestHandlerRejectsBadBodies(t *testing.T) {
	f := newFakeLLM(t)
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.MaxBodyBytes = 200 })
	srv := serveAgent(t, a, nil)
	for _, tt := range []struct {
		name, ct, body string
		status         int
		code           registry.Code
		msg            string
	}{
		{"unknown field", "application/json", `{"messages":[{"role":"user","content":"x"}],"temperature":1}`, 400, registry.CodeBadRequest, `unknown field "temperature"`},
		{"unknown message field", "", `{"messages":[{"role":"user","content":"x","name":"bob"}]}`, 400, registry.CodeBadRequest, `unknown field "name"`},
		{"too large", "application/json", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 300) + `"}]}`, 413, registry.CodeRequestTooLarge, "200-byte limit"},
		{"not JSON", "application/json", `{"messages":`, 400, registry.CodeBadRequest, "not valid JSON"},
		{"two values", "application/json", `{"messages":[{"role":"user","content":"x"}]} {}`, 400, registry.CodeBadRequest, "exactly one JSON value"},
		{"empty", "application/json", ``, 400, registry.CodeBadRequest, "empty"},
		{"form", "application/x-www-form-urlencoded", `a=b`, 400, registry.CodeBadRequest, "application/json"},
		{"wrong type", "application/json", `{"messages":"hi"}`, 400, registry.CodeBadRequest, `"messages"`},
		{"unknown profile", "application/json", `{"profile":"ghost","messages":[{"role":"user","content":"x"}]}`, 400, registry.CodeBadRequest, `"ghost"`},
		{"unknown profile, streaming", "application/json", `{"profile":"ghost","stream":true,"messages":[{"role":"user","content":"x"}]}`, 400, registry.CodeBadRequest, `"ghost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := post(t, srv, tt.ct, tt.body)
			e := decodeError(t, b)
			if resp.StatusCode != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("bad bodies reached the model: %d", n)
	}
}

func TestHandlerErrorStatuses(t *testing.T) {
	t.Run("unconfigured", func(t *testing.T) {
		a, _ := newTestAgent(t, newFakeLLM(t), profilesDoc, func(c *Config) { c.Model = "" })
		resp, b := post(t, serveAgent(t, a, nil), "", `{"messages":[{"role":"user","content":"x"}]}`)
		if e := decodeError(t, b); resp.StatusCode != 503 || e.Code != CodeUnconfigured || e.Retryable {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("model unavailable", func(t *testing.T) {
		f := newFakeLLM(t, failWith(503, "busy"), failWith(503, "busy"), failWith(503, "busy"))
		a, _ := newTestAgent(t, f, profilesDoc, nil)
		resp, b := post(t, serveAgent(t, a, nil), "", `{"messages":[{"role":"user","content":"x"}]}`)
		if e := decodeError(t, b); resp.StatusCode != 503 || e.Code != CodeModelUnavailable || !e.Retryable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("over budget while streaming", func(t *testing.T) {
		a, _ := newTestAgent(t, newFakeLLM(t), profilesDoc, nil)
		resp, b := post(t, serveAgent(t, a, nil), "", `{"profile":"tiny","stream":true,"messages":[{"role":"user","content":"echo hello"}]}`)
		if e := decodeError(t, b); resp.StatusCode != 413 || e.Code != CodeContextBudget {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
}

func TestHandlerStreams(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha__echo", `{"msg":"hi"}`)), text("It said hi."))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	srv := serveAgent(t, a, nil)
	resp, b := post(t, srv, "application/json", `{"messages":[{"role":"user","content":"echo hi"}],"stream":true}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	evs := readSSE(t, strings.NewReader(string(b)))
	var names []string
	var text string
	for _, e := range evs {
		if e.name == "delta" {
			var ev Event
			json.Unmarshal([]byte(e.data), &ev)
			text += ev.Delta
			continue
		}
		names = append(names, e.name)
	}
	if strings.Join(names, ",") != "start,tool_call_started,tool_call_finished,done" || text != "It said hi." {
		t.Fatalf("events %v, text %q\n%s", names, text, b)
	}
	var started, finished Event
	json.Unmarshal([]byte(evs[1].data), &started)
	json.Unmarshal([]byte(evs[2].data), &finished)
	if started.Call.Name != "alpha__echo" || started.Call.OK || !finished.Call.OK || finished.Call.Skill != "alpha" || finished.Call.DurationMS <= 0 {
		t.Fatalf("tool events %s / %s", evs[1].data, evs[2].data)
	}
	var done Response
	if err := json.Unmarshal([]byte(evs[len(evs)-1].data), &done); err != nil || done.Answer != "It said hi." || done.Steps != 2 {
		t.Fatalf("done = %s", evs[len(evs)-1].data)
	}
}

func TestHandlerStreamsLateErrorAsEvent(t *testing.T) {
	f := newFakeLLM(t, calls(tc("c1", "alpha__echo", `{}`)), failWith(401, "bad key"))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	resp, b := post(t, serveAgent(t, a, nil), "", `{"messages":[{"role":"user","content":"echo hi"}],"stream":true}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	evs := readSSE(t, strings.NewReader(string(b)))
	last := evs[len(evs)-1]
	if e := decodeError(t, []byte(last.data)); last.name != "error" || e.Code != CodeModelError {
		t.Fatalf("last event = %+v", last)
	}
}

func TestHeartbeatKeepsStreamAlive(t *testing.T) {
	release := make(chan struct{})
	slow := text("late")
	slow.wait = release
	f := newFakeLLM(t, slow)
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.Heartbeat = 10 * time.Millisecond })
	srv := serveAgent(t, a, nil)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"stream":true}`))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The start event, then a heartbeat comment while the model thinks.
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before a heartbeat: %v", err)
		}
		if strings.HasPrefix(line, ": keep-alive") {
			break
		}
	}
	close(release)
	evs := readSSE(t, br)
	if len(evs) == 0 || evs[len(evs)-1].name != "done" {
		t.Fatalf("events after the heartbeat = %+v", evs)
	}
}
