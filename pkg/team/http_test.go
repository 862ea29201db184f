package team

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func newAPIServer(t *testing.T, s *Store) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	a := NewAPI(s)
	a.Mount(mux.Handle)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		a.Drain()
		srv.Close()
	})
	return srv
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
	s, _ := newTeam(t, Spec{ID: "t"}, "fe-dev")
	srv := newAPIServer(t, s)
	cases := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"POST", "/v1/teams", `{"id": "x"`, 400, "bad_request"},
		{"POST", "/v1/teams", `{"id": "x", "extra": 1}`, 400, "bad_request"},
		{"POST", "/v1/teams", `{"id": "Bad Id"}`, 400, "bad_request"},
		{"POST", "/v1/teams", `{"id": "x", "grace_s": -1}`, 400, "bad_request"},
		{"POST", "/v1/teams", `{"id": "t"}`, 409, "team_exists"},
		{"GET", "/v1/teams/nope", "", 404, "unknown_team"},
		{"GET", "/v1/teams/..%2f..%2fetc", "", 404, "unknown_team"},
		{"GET", "/v1/teams/nope/events", "", 404, "unknown_team"},
		{"GET", "/v1/teams/t/events?after=x", "", 400, "bad_request"},
		{"POST", "/v1/teams/nope/members", `{"name": "a"}`, 404, "unknown_team"},
		{"POST", "/v1/teams/t/members", `{"name": "fe-dev"}`, 409, "team_exists"},
		{"POST", "/v1/teams/t/members", `{"name": "human"}`, 400, "bad_request"},
		{"POST", "/v1/teams/t/members", `{"name": 1}`, 400, "bad_request"},
		{"POST", "/v1/teams/nope/messages", `{"to": "lead", "text": "x"}`, 404, "unknown_team"},
		{"POST", "/v1/teams/t/messages", `{"to": "lead"}`, 400, "bad_request"},
		{"POST", "/v1/teams/t/messages", `{"text": "x"}`, 400, "bad_request"},
		{"POST", "/v1/teams/t/messages", `{"to": "lead", "broadcast": true, "text": "x"}`, 400, "bad_request"},
		{"POST", "/v1/teams/t/messages", `{"to": "ghost", "text": "x"}`, 404, "unknown_member"},
		{"POST", "/v1/teams/nope/stop", "", 404, "unknown_team"},
		{"POST", "/v1/teams/t/stop", `{"reason": 1}`, 400, "bad_request"},
	}
	for _, c := range cases {
		status, body := do(t, srv, c.method, c.path, c.body)
		wantCode(t, c.method+" "+c.path+" "+c.body, status, body, c.status, c.code)
	}
	// Stopped: a message to a member now comes back, and a second stop is
	// refused.
	if status, body := do(t, srv, "POST", "/v1/teams/t/stop", `{"reason": "done"}`); status != 200 || body["stopped"] != true {
		t.Fatalf("stop: %d %v", status, body)
	}
	status, body := do(t, srv, "POST", "/v1/teams/t/stop", "")
	wantCode(t, "second stop", status, body, 409, "team_stopped")
	status, body = do(t, srv, "POST", "/v1/teams/t/messages", `{"to": "fe-dev", "text": "x"}`)
	wantCode(t, "send to a stopped team", status, body, 409, "team_stopped")
}

// TestAPIDrivesATeam creates a team through the API with a task for its
// lead, spawns a teammate, sends it a message as the human, and follows
// the events, resuming with Last-Event-ID.
func TestAPIDrivesATeam(t *testing.T) {
	model := &teamModel{t: t, rules: map[string]rule{
		"lead": func(mail string, _ int, _ openai.ChatCompletionRequest) openai.ChatCompletionMessage {
			return say("lead got: " + mail)
		},
		"fe-dev": mateRule("frontend__build"),
	}}
	h := newDriverHarness(t, "", model)
	srv := newAPIServer(t, h.store)
	status, body := do(t, srv, "POST", "/v1/teams", `{"id": "web", "lead": {"profile": "lead"}, "task": "plan the app", "budget": 10000}`)
	if status != 201 || body["id"] != "web" || body["lead"] != "lead" {
		t.Fatalf("create: %d %v", status, body)
	}
	if status, body := do(t, srv, "POST", "/v1/teams/web/members", `{"name": "fe-dev", "role": "frontend", "profile": "frontend"}`); status != 201 || body["name"] != "fe-dev" {
		t.Fatalf("spawn: %d %v", status, body)
	}
	if status, body := do(t, srv, "POST", "/v1/teams/web/messages", `{"to": "fe-dev", "text": "build it"}`); status != 202 || body["id"] == "" {
		t.Fatalf("send: %d %v", status, body)
	}
	tm, _ := h.store.Team("web")
	waitUntil(t, tm, func() bool { return tm.st.members["fe-dev"].used > 0 && tm.st.members["lead"].used > 0 })
	settle(t, tm)
	status, body = do(t, srv, "GET", "/v1/teams/web", "")
	if status != 200 || !strings.HasPrefix(body["answer"].(string), "lead got: ") || len(body["members"].([]any)) != 2 {
		t.Fatalf("show: %d %v", status, body)
	}
	status, body = do(t, srv, "GET", "/v1/teams", "")
	if teams := body["teams"].([]any); status != 200 || len(teams) != 1 {
		t.Fatalf("list: %d %v", status, body)
	}

	// The event stream, from the start and then resumed after seq 2.
	seqs := func(lastID string, n int) []string {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/teams/web/events", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ids []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && len(ids) < n {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	if got := strings.Join(seqs("", 3), ","); got != "1,2,3" {
		t.Errorf("events from the start: %s", got)
	}
	if got := strings.Join(seqs("2", 2), ","); got != "3,4" {
		t.Errorf("events after Last-Event-ID 2: %s", got)
	}
}
