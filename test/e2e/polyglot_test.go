package e2e

import (
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestNodeSkillThroughDaemon serves the example skill written in
// JavaScript (examples/polyglot/wordstats-node) from a real daemon: its
// tools are listed and called over the HTTP API, a tool's refusal comes back
// in the one error shape, and when the daemon is killed outright (no
// Shutdown call) the skill exits on its own.
func TestNodeSkillThroughDaemon(t *testing.T) {
	tree := t.TempDir()
	testenv.InstallNodeSkill(t, tree)
	d := startDaemon(t, tree, "--start-timeout", "60s")

	var tools struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	_, body := d.Do(t, "GET", "/v1/tools", nil)
	if err := json.Unmarshal(body, &tools); err != nil {
		t.Fatalf("tools: %v: %s", err, body)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"wordstats.count", "wordstats.top_words"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v\n%s", names, want, d.Logs())
	}
	code, body := d.Do(t, "POST", "/v1/tools/wordstats.count/invoke", `{"arguments":{"text":"one two\nthree"}}`)
	var res struct {
		Result struct{ Words, Lines, Chars int } `json:"result"`
	}
	if err := json.Unmarshal(body, &res); code != 200 || err != nil || res.Result.Words != 3 || res.Result.Lines != 2 || res.Result.Chars != 13 {
		t.Fatalf("count: %d %s", code, body)
	}
	code, body = d.Do(t, "POST", "/v1/tools/wordstats.top_words/invoke", `{"arguments":{"text":"?!"}}`)
	wantError(t, "top_words on no words", code, body, 422, "tool_error")

	var st struct {
		Versions []struct{ PID int } `json:"versions"`
	}
	_, body = d.Do(t, "GET", "/v1/skills/wordstats", nil)
	if err := json.Unmarshal(body, &st); err != nil || len(st.Versions) != 1 || st.Versions[0].PID == 0 {
		t.Fatalf("wordstats status: %v: %s", err, body)
	}
	pid := st.Versions[0].PID
	d.Kill()
	if !testenv.WaitFor(5*time.Second, func() bool { return !testenv.Alive(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("skill %d alive 5 s after SIGKILL of the host", pid)
	}
}
