package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestRunAndRunsCLI drives a flow with a human in it from the CLI against
// a real daemon: `host run` streams until the run waits for the human,
// `host runs ID --say` answers and follows it to its stop, and `host runs`
// lists and shows it.
func TestRunAndRunsCLI(t *testing.T) {
	f := newFakeModel(t, say("Hello. What shall we do?"), say("Done, BYE"))
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(agents, []byte("default: host\nprofiles:\n  host: {system: You host.}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "flows"), 0o755)
	flowDoc := "participants: [{name: host, profile: host}, {name: me, human: true}]\ntermination: {text_mention: BYE}\n"
	if err := os.WriteFile(filepath.Join(dir, "flows", "chat.yaml"), []byte(flowDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", skillsTree(t), "--watch=false",
		"--llm-base-url", f.srv.URL+"/v1", "--llm-model", "fake-model", "--agents", agents)
	cli := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append(args, "--addr", d.URL), &out, &errb); code != exitOK {
			t.Fatalf("host %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}

	out := cli("run", "chat", "plan a trip")
	id := regexp.MustCompile(`run (\S+) of flow chat`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, "→ host (the flow's start participant)") ||
		!strings.Contains(out, "host: Hello. What shall we do?") || !strings.Contains(out, "waiting for you") {
		t.Fatalf("host run printed:\n%s", out)
	}
	out = cli("runs", id[1], "--say", "book it")
	if !strings.Contains(out, "me: book it") || !strings.Contains(out, "host: Done, BYE") || !strings.Contains(out, "stopped: text_mention") {
		t.Fatalf("host runs --say printed:\n%s", out)
	}
	if out = cli("runs"); !strings.Contains(out, id[1]) || !strings.Contains(out, "text_mention") {
		t.Errorf("host runs printed:\n%s", out)
	}
	out = cli("runs", id[1])
	if !strings.Contains(out, "stop_reason text_mention") || !strings.Contains(out, "me: book it") || !strings.Contains(out, "tokens: host") {
		t.Errorf("host runs ID printed:\n%s", out)
	}
}
