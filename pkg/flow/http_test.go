package flow

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/runs"
)

func newAPIServer(t *testing.T, h *harness, reload func() error) (*httptest.Server, *API) {
	t.Helper()
	mux := http.NewServeMux()
	a := NewAPI(h.eng, reload)
	a.Mount(mux.Handle)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		a.Drain()
		srv.Close()
	})
	return srv, a
}

func do(t *testing.T, srv *httptest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return resp.StatusCode, out
}

func wantCode(t *testing.T, what string, status int, body map[string]any, wantStatus int, code string) {
	t.Helper()
	e, _ := body["error"].(map[string]any)
	if status != wantStatus || e == nil || e["code"] != code || e["message"] == "" {
		t.Errorf("%s: %d %v, want %d %s in the error shape", what, status, body, wantStatus, code)
	}
}

func TestAPIErrors(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: user, human: true}
termination: {text_mention: BYE}
`, map[string][]answer{"admin": {say("your turn"), say("BYE")}})
	srv, _ := newAPIServer(t, h, nil)
	const unknownID = "20261206T000215.516Z-156050"

	status, body := do(t, srv, "POST", "/v1/runs", `{"flow": "test"`)
	wantCode(t, "torn body", status, body, 400, "bad_request")
	status, body = do(t, srv, "POST", "/v1/runs", `{"flow": "test", "input": "x", "extra": 1}`)
	wantCode(t, "unknown field", status, body, 400, "bad_request")
	status, body = do(t, srv, "POST", "/v1/runs", `{"flow": "test"}`)
	wantCode(t, "no input", status, body, 400, "bad_request")
	status, body = do(t, srv, "POST", "/v1/runs", `{"flow": "nope", "input": "x"}`)
	wantCode(t, "unknown flow", status, body, 404, "unknown_flow")

	for _, p := range []string{"/v1/runs/" + unknownID, "/v1/runs/..%2f..%2fetc", "/v1/runs/" + unknownID + "/events"} {
		status, body = do(t, srv, "GET", p, "")
		wantCode(t, "GET "+p, status, body, 404, "unknown_run")
	}
	status, body = do(t, srv, "POST", "/v1/runs/"+unknownID+"/stop", "")
	wantCode(t, "stop unknown", status, body, 404, "unknown_run")
	status, body = do(t, srv, "POST", "/v1/runs/"+unknownID+"/input", `{"message": "hi"}`)
	wantCode(t, "input unknown", status, body, 404, "unknown_run")

	status, body = do(t, srv, "POST", "/v1/runs", `{"flow": "test", "input": "chat"}`)
	if status != 201 || body["id"] == "" {
		t.Fatalf("start: %d %v", status, body)
	}
	id := body["id"].(string)
	r, _ := h.store.Run(id)
	h.waitFor(r, runs.KindHumanInputWait)
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/input", `{"message": " "}`)
	wantCode(t, "empty input", status, body, 400, "bad_request")
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/input", `{"message": "go on"}`)
	if status != 202 {
		t.Fatalf("input: %d %v", status, body)
	}
	sum := h.wait(r)
	if sum.StopReason != ReasonTextMention {
		t.Fatalf("stop %q", sum.StopReason)
	}
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/input", `{"message": "late"}`)
	wantCode(t, "input after the stop", status, body, 409, "run_stopped")
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/stop", "")
	wantCode(t, "stop a stopped run", status, body, 409, "run_stopped")

	status, body = do(t, srv, "GET", "/v1/runs/"+id, "")
	if status != 200 || body["stop_reason"] != ReasonTextMention || len(body["transcript"].([]any)) != 3 {
		t.Errorf("get: %d %v", status, body)
	}
	if u := body["usage"].(map[string]any)["admin"].(map[string]any); u["calls"] != 2.0 {
		t.Errorf("usage %v", u)
	}
	status, body = do(t, srv, "GET", "/v1/runs", "")
	if status != 200 || len(body["runs"].([]any)) != 1 {
		t.Errorf("list: %d %v", status, body)
	}
	status, body = do(t, srv, "POST", "/v1/flows/reload", "")
	wantCode(t, "reload without a folder", status, body, 400, "bad_request")
}

func TestAPINotWaitingAndReload(t *testing.T) {
	h := newHarness(t, "participants: [{name: runner, tool: util.block, arguments: {text: '\"x\"'}}]\n", nil)
	srv, _ := newAPIServer(t, h, func() error {
		return errors.Join(errors.New("flow file a.yaml: participants: at least one participant is required"),
			errors.New("flow file b.yaml: selection.mode: must be round_robin, selector or graph"))
	})
	status, body := do(t, srv, "POST", "/v1/runs", `{"flow": "test", "input": "go"}`)
	if status != 201 {
		t.Fatalf("start: %d %v", status, body)
	}
	id := body["id"].(string)
	<-h.util.blocked
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/input", `{"message": "hi"}`)
	wantCode(t, "input to a running run", status, body, 409, "not_waiting")
	status, body = do(t, srv, "POST", "/v1/runs/"+id+"/stop", "")
	if status != 200 || body["stop_reason"] != runs.StopExternal {
		t.Errorf("stop: %d %v", status, body)
	}
	<-h.util.ended
	status, body = do(t, srv, "POST", "/v1/flows/reload", "")
	wantCode(t, "bad reload", status, body, 422, "invalid_flows")
	if p := body["error"].(map[string]any)["details"].(map[string]any)["problems"].([]any); len(p) != 2 {
		t.Errorf("problems %v, want both", p)
	}
	status, body = do(t, srv, "GET", "/v1/flows", "")
	if status != 200 || len(body["flows"].([]any)) != 1 {
		t.Errorf("flows after a bad reload: %d %v", status, body)
	}
}

func TestAPIEventsResumeFromLastEventID(t *testing.T) {
	h := newHarness(t, "participants: [{name: admin, profile: admin}]\ntermination: {max_rounds: 2}\n",
		map[string][]answer{"admin": {say("one"), say("two")}})
	srv, _ := newAPIServer(t, h, nil)
	r := h.start("go")
	h.wait(r)
	all := len(events(t, r))

	req, _ := http.NewRequest("GET", srv.URL+"/v1/runs/"+r.ID()+"/events", nil)
	req.Header.Set("Last-Event-ID", "3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var ids []string
	last := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() { // the stream ends after the stop event
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, v)
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			last = v
		}
	}
	if len(ids) != all-3 || ids[0] != "4" || last != "stop" {
		t.Errorf("ids %v (of %d events), last %q; want from 4 to the stop", ids, all, last)
	}
	status, body := do(t, srv, "GET", "/v1/runs/"+r.ID()+"/events?after=x", "")
	wantCode(t, "bad after", status, body, 400, "bad_request")
}
