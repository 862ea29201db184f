package team

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestShutdownProtocol walks a shutdown through its states: the lead
// asks, the teammate approves, it is stopping (messages to it bounce),
// and its driver's Finish stops it. Answers to unknown or answered
// requests, from the wrong member, or of the wrong type are refused.
func TestShutdownProtocol(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev")
	req := must(tm.Send(Message{Type: TypeShutdownRequest, From: "lead", To: "fe-dev", Content: "wrap up"}))
	if req.RequestID == "" {
		t.Fatal("no request id made")
	}
	got := receive(t, tm, "fe-dev")
	if len(got) != 1 || got[0].RequestID != req.RequestID || got[0].Type != TypeShutdownRequest {
		t.Fatalf("fe-dev got %+v", got)
	}
	if r := must(tm.Request(req.RequestID)); r.Answered || r.To != "fe-dev" {
		t.Fatalf("request %+v", r)
	}

	refused := []struct {
		m    Message
		want error
	}{
		{Message{Type: TypeShutdownResponse, From: "fe-dev", To: "lead", RequestID: "r-nope", Approve: ptr(true)}, ErrUnknownRequest},
		{Message{Type: TypeShutdownResponse, From: "be-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(true)}, ErrNotAddressee},
		{Message{Type: TypePlanApprovalResponse, From: "fe-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(true)}, ErrNotAddressee},
		{Message{Type: TypeShutdownRequest, From: "lead", To: "be-dev", RequestID: req.RequestID}, ErrRequestExists},
		{Message{Type: TypeShutdownRequest, From: "lead", To: "lead"}, ErrInvalid},
	}
	for _, c := range refused {
		_, err := tm.Send(c.m)
		wantErr(t, err, c.want)
	}

	must(tm.Send(Message{ID: "resp-1", Type: TypeShutdownResponse, From: "fe-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(true)}))
	m := must(tm.Member("fe-dev"))
	if m.Status != StatusStopping || m.Reason != ReasonShutdown || m.StopBy.IsZero() {
		t.Fatalf("fe-dev after approving: %+v", m)
	}
	// The same response again (a retry) passes; a different one is refused.
	must(tm.Send(Message{ID: "resp-1", Type: TypeShutdownResponse, From: "fe-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(true)}))
	_, err := tm.Send(Message{Type: TypeShutdownResponse, From: "fe-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(false)})
	wantErr(t, err, ErrRequestAnswered)
	if r := must(tm.Request(req.RequestID)); !r.Answered || !r.Approve {
		t.Fatalf("request after the answer: %+v", r)
	}
	if got := receive(t, tm, "lead"); len(got) != 1 || got[0].Type != TypeShutdownResponse || !*got[0].Approve {
		t.Fatalf("lead got %+v", got)
	}
	_, err = tm.Send(Message{Type: TypeMessage, From: "lead", To: "fe-dev", Content: "one more thing"})
	wantErr(t, err, ErrMemberStopped)
	receive(t, tm, "lead") // the bounce

	if err := tm.Finish("fe-dev"); err != nil {
		t.Fatal(err)
	}
	if m := must(tm.Member("fe-dev")); m.Status != StatusStopped || m.Reason != ReasonShutdown {
		t.Fatalf("fe-dev after Finish: %+v", m)
	}
	if got := must(tm.Member("fe-dev")).ToolsAllowed([]string{ToolSend}, nil); got != nil {
		t.Fatalf("a stopped member's tools: %v", got)
	}
	// A request to a stopped member bounces and leaves no pending request.
	gone, err := tm.Send(Message{Type: TypeShutdownRequest, From: "lead", To: "fe-dev"})
	wantErr(t, err, ErrMemberStopped)
	_, err = tm.Request(gone.RequestID)
	wantErr(t, err, ErrUnknownRequest)
	receive(t, tm, "lead") // the bounce

	// A refused shutdown leaves the teammate working.
	r2 := must(tm.Send(Message{Type: TypeShutdownRequest, From: "lead", To: "be-dev"}))
	must(tm.Send(Message{Type: TypeShutdownResponse, From: "be-dev", To: "lead", RequestID: r2.RequestID, Approve: ptr(false), Content: "still busy"}))
	if m := must(tm.Member("be-dev")); m.Status != StatusIdle {
		t.Fatalf("be-dev after refusing: %s", m.Status)
	}
}

// TestShutdownGrace: a stopping member whose driver never calls Finish is
// stopped by Reap once the grace has passed, not before. Fake time.
func TestShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tm := newTeam(t, Spec{Grace: 5 * time.Second}, "fe-dev")
		req := must(tm.Send(Message{Type: TypeShutdownRequest, From: "lead", To: "fe-dev"}))
		must(tm.Send(Message{Type: TypeShutdownResponse, From: "fe-dev", To: "lead", RequestID: req.RequestID, Approve: ptr(true)}))
		at, ok := tm.NextDeadline()
		if !ok || !at.Equal(time.Now().UTC().Add(5*time.Second)) {
			t.Fatalf("NextDeadline = %v, %v", at, ok)
		}
		time.Sleep(4 * time.Second)
		if due := must(tm.Reap()); len(due) != 0 {
			t.Fatalf("reaped %v before the grace ended", due)
		}
		time.Sleep(time.Second)
		if due := must(tm.Reap()); !slices.Equal(due, []string{"fe-dev"}) {
			t.Fatalf("reaped %v, want fe-dev", due)
		}
		m := must(tm.Member("fe-dev"))
		if m.Status != StatusStopped || !strings.Contains(m.Detail, "grace") {
			t.Fatalf("fe-dev after the grace: %+v", m)
		}
		if _, ok := tm.NextDeadline(); ok {
			t.Fatal("a deadline left after everyone stopped")
		}
	})
}

// TestPlanApproval: a teammate spawned in plan mode has read-only tools,
// asks the lead to approve its plan, and gets its tools when it does.
func TestPlanApproval(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	must(tm.Spawn("lead", MemberSpec{Name: "architect", PlanMode: true}))
	readOnly := func(tool string) bool { return strings.HasSuffix(tool, "__read") }
	tools := []string{ToolSend, ToolRead, "fs__read", "fs__write"}
	m := must(tm.Member("architect"))
	if !m.ReadOnly() || m.Status != StatusPlanMode {
		t.Fatalf("architect: %+v", m)
	}
	if got := m.ToolsAllowed(tools, readOnly); !slices.Equal(got, []string{ToolSend, ToolRead, "fs__read"}) {
		t.Fatalf("tools in plan mode: %v", got)
	}
	// Only a member in plan mode asks; the request goes to the lead.
	_, err := tm.Send(Message{Type: TypePlanApprovalRequest, From: "fe-dev", Content: "my plan"})
	wantErr(t, err, ErrNotInPlanMode)
	_, err = tm.Send(Message{Type: TypePlanApprovalRequest, From: "architect", To: "fe-dev", Content: "my plan"})
	wantErr(t, err, ErrInvalid)

	first := must(tm.Send(Message{Type: TypePlanApprovalRequest, From: "architect", Content: "plan v1"}))
	if first.To != "lead" {
		t.Fatalf("a plan went to %q", first.To)
	}
	must(tm.Send(Message{Type: TypePlanApprovalResponse, From: "lead", To: "architect", RequestID: first.RequestID, Approve: ptr(false), Content: "add tests"}))
	if !must(tm.Member("architect")).ReadOnly() {
		t.Fatal("a rejected plan let the member out of plan mode")
	}
	second := must(tm.Send(Message{Type: TypePlanApprovalRequest, From: "architect", Content: "plan v2, with tests"}))
	must(tm.Send(Message{Type: TypePlanApprovalResponse, From: "lead", To: "architect", RequestID: second.RequestID, Approve: ptr(true)}))
	m = must(tm.Member("architect"))
	if m.ReadOnly() || m.Status != StatusIdle {
		t.Fatalf("architect after approval: %+v", m)
	}
	if got := m.ToolsAllowed(tools, readOnly); !slices.Equal(got, tools) {
		t.Fatalf("tools after approval: %v", got)
	}
	// Its inbox has both answers, in order.
	got := receive(t, tm, "architect")
	if len(got) != 2 || *got[0].Approve || !*got[1].Approve {
		t.Fatalf("architect got %+v", got)
	}
}
