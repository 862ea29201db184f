package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/testenv"
)

var teamMemberRE = regexp.MustCompile(`You are ([a-z0-9_-]+), (?:the lead|a teammate)`)

// TestTeamSurvivesSIGKILL kills the daemon with SIGKILL while the lead of
// a team waits for the model in the middle of a turn, with mail still in
// its inbox, starts it again on the same state folder, and sends again
// the messages it was not sure had landed (same ids). Every message is in
// the lead's inbox once and was consumed once, and the open turn goes on.
func TestTeamSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var leadCalls atomic.Int64
	waiting := make(chan struct{}) // the lead's second model call is in flight
	llm := newScriptedLLM(t, func(ctx context.Context, _ string, _ int, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, bool) {
		m := teamMemberRE.FindStringSubmatch(req.Messages[0].Content)
		if m == nil || m[1] != "lead" {
			return openai.ChatCompletionMessage{}, false
		}
		if leadCalls.Add(1) == 2 { // the first daemon dies while this call waits
			close(waiting)
			<-ctx.Done()
			return openai.ChatCompletionMessage{}, false
		}
		return text(fmt.Sprintf("ok, %d messages seen", strings.Count(lastUser(req), "[message from human]"))), true
	})
	args := []string{"--skills", filepath.Join(dir, "skills"), "--state-dir", state, "--grace", "2s",
		"--llm-base-url", llm.URL(), "--llm-model", "scripted"}
	if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d)
	if code, body := d.Do(t, "POST", "/v1/teams", map[string]any{"id": "t", "task": "m0"}); code != 201 {
		t.Fatalf("create: %d %s\n%s", code, body, d.Logs())
	}
	send := func(d *testenv.Daemon, id string) {
		t.Helper()
		if code, body := d.Do(t, "POST", "/v1/teams/t/messages", map[string]any{"to": "lead", "id": id, "text": id}); code != 202 {
			t.Fatalf("send %s: %d %s\n%s", id, code, body, d.Logs())
		}
	}
	waitLead := func(d *testenv.Daemon, calls int64) {
		t.Helper()
		if !testenv.WaitFor(30*time.Second, func() bool { return leadCalls.Load() >= calls }) {
			t.Fatalf("the lead's model was called %d times, want %d\n%s", leadCalls.Load(), calls, d.Logs())
		}
	}
	waitLead(d, 1)
	for i := 1; i <= 5; i++ {
		send(d, fmt.Sprint("m", i))
	}
	select {
	case <-waiting:
	case <-time.After(60 * time.Second):
		t.Fatalf("the lead was never called a second time\n%s", d.Logs())
	}
	send(d, "m6")
	send(d, "m7")
	d.Kill()

	d = testenv.StartDaemon(t, hostBin, nil, args...)
	waitReady(t, d)
	for _, id := range []string{"m6", "m7", "m8"} { // an unsure sender retries by id
		send(d, id)
	}
	var view struct {
		Answer  string `json:"answer"`
		Members []struct {
			Name       string `json:"name"`
			Status     string `json:"status"`
			InboxDepth int    `json:"inbox_depth"`
		} `json:"members"`
	}
	if !testenv.WaitFor(30*time.Second, func() bool {
		_, body := d.Do(t, "GET", "/v1/teams/t", nil)
		return json.Unmarshal(body, &view) == nil && len(view.Members) == 1 &&
			view.Members[0].InboxDepth == 0 && view.Members[0].Status == "idle" && leadCalls.Load() >= 3
	}) {
		t.Fatalf("the lead never caught up: %+v\n%s", view, d.Logs())
	}
	inbox := countIDs(t, filepath.Join(state, "teams", "t", "inbox", "lead.jsonl"), "team.message", "id")
	consumed := countIDs(t, filepath.Join(state, "teams", "t", "members", "lead.jsonl"), "team.consumed", "ids")
	for _, id := range []string{"task", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"} {
		if inbox[id] != 1 || consumed[id] != 1 {
			t.Errorf("message %s: %d times in the inbox, consumed %d times; want once each", id, inbox[id], consumed[id])
		}
	}
	if len(inbox) != 9 || len(consumed) != 9 {
		t.Errorf("inbox %v, consumed %v", inbox, consumed)
	}
}

// lastUser is the newest user message of a request.
func lastUser(req openai.ChatCompletionRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == openai.ChatMessageRoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// countIDs counts the ids in a pkg/runs log's records of kind: field is
// "id" (one per record) or "ids" (a list).
func countIDs(t *testing.T, path, kind, field string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Kind string                     `json:"kind"`
			Data map[string]json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Kind != kind {
			continue
		}
		var ids []string
		if field == "id" {
			var id string
			json.Unmarshal(rec.Data[field], &id)
			ids = []string{id}
		} else {
			json.Unmarshal(rec.Data[field], &ids)
		}
		for _, id := range ids {
			out[id]++
		}
	}
	return out
}
