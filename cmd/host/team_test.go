package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestTeamCLI drives a team from the CLI against a real daemon: create
// with a task, spawn, send, show, list, stop, and follow the team log to
// its stop.
func TestTeamCLI(t *testing.T) {
	// At most three model calls: the lead's on its task, fe-dev's on the
	// message, and the lead's on fe-dev's answer.
	f := newFakeModel(t, say("on it"), say("hello lead"), say("noted"))
	d := testenv.StartDaemon(t, hostBin, nil, "--skills", skillsTree(t), "--watch=false",
		"--llm-base-url", f.srv.URL+"/v1", "--llm-model", "fake-model")
	cli := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(append(args, "--addr", d.URL), &out, &errb); code != exitOK {
			t.Fatalf("host %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}
	if out := cli("team", "create", "web", "build the login page", "--budget", "100000"); !strings.Contains(out, "team web, lead lead") {
		t.Fatalf("create printed:\n%s", out)
	}
	if out := cli("team", "spawn", "web", "fe-dev", "--role", "frontend"); !strings.Contains(out, "spawned fe-dev in team web") {
		t.Fatalf("spawn printed:\n%s", out)
	}
	if out := cli("team", "send", "web", "fe-dev", "hi"); !strings.HasPrefix(out, "sent ") {
		t.Fatalf("send printed:\n%s", out)
	}
	if out := cli("team", "show", "web"); !strings.Contains(out, "fe-dev") || !strings.Contains(out, "frontend") || !strings.Contains(out, "MEMBER") {
		t.Errorf("show printed:\n%s", out)
	}
	if out := cli("team"); !strings.Contains(out, "web") || !strings.Contains(out, "LEAD") {
		t.Errorf("list printed:\n%s", out)
	}
	if out := cli("team", "stop", "web"); !strings.Contains(out, "stopped (stopped by human)") {
		t.Errorf("stop printed:\n%s", out)
	}
	out := cli("team", "follow", "web")
	if !strings.Contains(out, "1 created") || !strings.Contains(out, "spawned") || !strings.HasSuffix(strings.TrimSpace(out), `{"reason":"stopped by human"}`) {
		t.Errorf("follow printed:\n%s", out)
	}
	var errb bytes.Buffer
	if code := run([]string{"team", "show", "nope", "--addr", d.URL}, new(bytes.Buffer), &errb); code == exitOK || !strings.Contains(errb.String(), "unknown_team") {
		t.Errorf("show of an unknown team: exit %d, %s", code, errb.String())
	}
}
