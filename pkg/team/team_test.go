package team

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/runs"
)

func TestCreateAndSpawn(t *testing.T) {
	s, tm := newTeam(t, Spec{Budget: 1000}, "fe-dev", "be-dev")
	if _, err := s.Create(Spec{ID: "t", Lead: MemberSpec{Name: "lead"}}); err == nil {
		t.Fatal("second Create of team t succeeded")
	} else {
		wantErr(t, err, ErrTeamExists)
	}
	ms := tm.Members()
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "lead,fe-dev,be-dev" || !ms[0].Lead || ms[1].Lead {
		t.Fatalf("members %v (lead flags %v %v)", names, ms[0].Lead, ms[1].Lead)
	}
	if ms[1].Status != StatusIdle || ms[1].Role != "worker" || ms[1].Profile != "default" {
		t.Fatalf("a new teammate: %+v", ms[1])
	}
	_, err := tm.Spawn("lead", MemberSpec{Name: "fe-dev"})
	wantErr(t, err, ErrMemberExists)
	for _, bad := range []string{"", "Fe", "a/b", "../x", Human, System, "a--b"} {
		_, err := tm.Spawn("lead", MemberSpec{Name: bad})
		wantErr(t, err, ErrInvalid)
	}
	if _, err := s.Create(Spec{ID: "../x", Lead: MemberSpec{Name: "lead"}}); err == nil {
		t.Fatal("a team id with a path in it was accepted")
	}
	_, err = s.Team("nope")
	wantErr(t, err, ErrUnknownTeam)
	// The files a person looks at.
	for _, f := range []string{"team.jsonl", "inbox/lead.jsonl", "inbox/fe-dev.jsonl", "members/be-dev.jsonl"} {
		if _, err := os.Stat(filepath.Join(tm.Dir(), f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// A Create cut short by a crash (an empty team log) is no team, and
	// a new Create takes its folder over.
	half := filepath.Join(filepath.Dir(tm.Dir()), "half")
	if err := os.MkdirAll(half, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(half, "team.jsonl"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Team("half")
	wantErr(t, err, ErrUnknownTeam)
	must(s.Create(Spec{ID: "half", Lead: MemberSpec{Name: "boss"}}))
	if ids := must(s.IDs()); !slices.Equal(ids, []string{"half", "t"}) {
		t.Fatalf("IDs() = %v", ids)
	}
}

// TestLeadOnly checks the tool table: spawn, list, broadcast and shutdown
// requests are the lead's (and the human operator's); a teammate can only
// send and read.
func TestLeadOnly(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev")
	_, err := tm.Spawn("fe-dev", MemberSpec{Name: "x"})
	wantErr(t, err, ErrLeadOnly)
	_, err = tm.List("fe-dev")
	wantErr(t, err, ErrLeadOnly)
	_, err = tm.Send(Message{Type: TypeBroadcast, From: "fe-dev", Content: "hi all"})
	wantErr(t, err, ErrLeadOnly)
	_, err = tm.Send(Message{Type: TypeShutdownRequest, From: "fe-dev", To: "be-dev"})
	wantErr(t, err, ErrLeadOnly)
	err = tm.Stop("fe-dev", "")
	wantErr(t, err, ErrLeadOnly)
	_, err = tm.Spawn("ghost", MemberSpec{Name: "x"})
	wantErr(t, err, ErrUnknownMember)

	if ms := must(tm.List("lead")); len(ms) != 3 {
		t.Fatalf("lead's list: %d members", len(ms))
	}
	must(tm.Spawn(Human, MemberSpec{Name: "qa"}))
	send(t, tm, "fe-dev", "be-dev", "teammates may talk to each other")

	lead := must(tm.Member("lead"))
	fe := must(tm.Member("fe-dev"))
	all := []string{ToolSpawn, ToolList, ToolBroadcast, ToolSend, ToolRead, "fs__read", "fs__write"}
	if got := lead.ToolsAllowed(all, nil); !slices.Equal(got, all) {
		t.Fatalf("lead's tools %v", got)
	}
	if got := fe.ToolsAllowed(all, nil); !slices.Equal(got, []string{ToolSend, ToolRead, "fs__read", "fs__write"}) {
		t.Fatalf("teammate's tools %v", got)
	}
}

// TestRestart closes the store and opens it again: members, statuses,
// usage, the inbox (what was and was not consumed) and the board are as
// they were, and the team goes on.
func TestRestart(t *testing.T) {
	s, tm := newTeam(t, Spec{Budget: 10_000}, "fe-dev", "be-dev")
	must(tm.Spawn("lead", MemberSpec{Name: "planner", PlanMode: true}))
	send(t, tm, "lead", "fe-dev", "one")
	send(t, tm, "lead", "fe-dev", "two")
	first := must(tm.Inbox("fe-dev", 1))
	if err := tm.Consume("fe-dev", first); err != nil {
		t.Fatal(err)
	}
	if err := tm.RecordUsage("be-dev", 120); err != nil {
		t.Fatal(err)
	}
	must(tm.CreateTasks("lead", TaskSpec{ID: "a", Title: "A"}, TaskSpec{ID: "b", Title: "B", Deps: []string{"a"}}))
	must(tm.Claim("be-dev", "a", 0))
	if err := tm.stopMember("fe-dev", ReasonShutdown, ""); err != nil {
		t.Fatal(err)
	}
	before := tm.Summary()
	tasks := tm.Tasks()

	_, tm2 := reopen(t, s, "t")
	after := tm2.Summary()
	if len(after.Members) != len(before.Members) {
		t.Fatalf("members %d → %d", len(before.Members), len(after.Members))
	}
	for i := range before.Members {
		if before.Members[i] != after.Members[i] {
			t.Errorf("member %d: %+v → %+v", i, before.Members[i], after.Members[i])
		}
	}
	if after.TokensUsed != 120 || must(tm2.Member("planner")).Status != StatusPlanMode {
		t.Fatalf("after restart: %+v", after)
	}
	for i, task := range tm2.Tasks() {
		if task.Status != tasks[i].Status || task.Owner != tasks[i].Owner || !task.LeaseUntil.Equal(tasks[i].LeaseUntil) {
			t.Errorf("task %s: %+v → %+v", task.ID, tasks[i], task)
		}
	}
	// fe-dev was stopped with "two" unread: it went back to the lead.
	msgs := receive(t, tm2, "lead")
	if len(msgs) != 1 || msgs[0].Type != TypeBounce || msgs[0].Bounced.Content != "two" {
		t.Fatalf("lead's inbox after restart: %+v", msgs)
	}
	// The team log is a stream a follower resumes from a seq.
	evs, changed, err := tm2.ReadEvents(0, 0)
	if err != nil || len(evs) == 0 || evs[0].Kind != "team.created" {
		t.Fatalf("ReadEvents(0) = %d events, %v", len(evs), err)
	}
	last := evs[len(evs)-1].Seq
	if more, _, _ := tm2.ReadEvents(last, 0); len(more) != 0 {
		t.Fatalf("%d events after the last", len(more))
	}
	// And the team goes on.
	send(t, tm2, "lead", "be-dev", "three")
	if got := receive(t, tm2, "be-dev"); len(got) != 1 || got[0].Content != "three" {
		t.Fatalf("be-dev got %+v", got)
	}
	if err := tm2.RecordUsage("be-dev", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("a follower of the team log was not woken by a new record")
	}
	if more, _, _ := tm2.ReadEvents(last, 0); len(more) != 1 || more[0].Kind != "team.usage" {
		t.Fatalf("after usage: %+v", more)
	}
}

func TestStopTeam(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	send(t, tm, "lead", "fe-dev", "unread")
	if err := tm.Stop(Human, "done for the day"); err != nil {
		t.Fatal(err)
	}
	for _, m := range tm.Members() {
		if m.Status != StatusStopped || m.Reason != ReasonTeamStopped {
			t.Fatalf("%s after Stop: %s %s", m.Name, m.Status, m.Reason)
		}
	}
	if sum := tm.Summary(); !sum.Stopped || sum.StopReason != "done for the day" {
		t.Fatalf("summary %+v", sum)
	}
	_, err := tm.Send(Message{Type: TypeMessage, From: Human, To: "fe-dev"})
	wantErr(t, err, ErrTeamStopped)
	_, err = tm.CreateTasks("lead", TaskSpec{Title: "x"})
	wantErr(t, err, ErrTeamStopped)
	// The lead (stopped too) still has fe-dev's unread mail back, kept in
	// its inbox for a person to read.
	msgs := must(tm.Inbox("lead", 0))
	if len(msgs) != 1 || msgs[0].Type != TypeBounce {
		t.Fatalf("lead's inbox: %+v", msgs)
	}
}

// TestOneDaemonPerTeam: a second store on the same state folder cannot
// load a team the first holds (its team log is locked), even while the
// members' files are parked.
func TestOneDaemonPerTeam(t *testing.T) {
	s, tm := newTeam(t, Spec{}, "fe-dev")
	send(t, tm, "lead", "fe-dev", "x")
	other, err := Open(Config{Dir: filepath.Dir(s.dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Team("t")
	wantErr(t, err, runs.ErrLocked)
}

// TestCloseWakesWaiters: closing the store ends a wait with ErrClosed.
func TestCloseWakesWaiters(t *testing.T) {
	s, tm := newTeam(t, Spec{}, "fe-dev")
	must(tm.CreateTasks("lead", TaskSpec{ID: "x", Title: "x"}))
	errc := make(chan error, 1)
	go func() {
		_, err := tm.WaitTasks(context.Background(), []string{"x"}, 0)
		errc <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, <-errc, ErrClosed)
	_, err := s.Team("t")
	wantErr(t, err, ErrClosed)
	_, err = tm.Send(Message{Type: TypeMessage, From: "lead", To: "fe-dev"})
	wantErr(t, err, ErrClosed)
}
