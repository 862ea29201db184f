package team

import (
	"strings"
	"testing"
)

// TestMemberBudget: usage past a member's budget stops it with reason
// budget_exceeded, gives back its task and unread mail, and tells the lead.
func TestMemberBudget(t *testing.T) {
	_, tm := newTeam(t, Spec{})
	must(tm.Spawn("lead", MemberSpec{Name: "fe-dev", Budget: 1000}))
	must(tm.CreateTasks("lead", TaskSpec{ID: "x", Title: "x"}))
	must(tm.Claim("fe-dev", "x", 0))
	send(t, tm, "lead", "fe-dev", "unread")
	if err := tm.RecordUsage("fe-dev", 600); err != nil {
		t.Fatal(err)
	}
	if err := tm.CheckBudget("fe-dev"); err != nil {
		t.Fatalf("CheckBudget at 600 of 1000: %v", err)
	}
	if err := tm.RecordUsage("fe-dev", 400); err != nil {
		t.Fatalf("usage up to the budget: %v", err)
	}
	wantErr(t, tm.CheckBudget("fe-dev"), ErrBudgetExceeded) // spent: no further call
	err := tm.RecordUsage("fe-dev", 1)
	wantErr(t, err, ErrBudgetExceeded)
	m := must(tm.Member("fe-dev"))
	if m.Status != StatusStopped || m.Reason != ReasonBudgetExceeded || m.TokensUsed != 1001 || m.CurrentTask != "" {
		t.Fatalf("fe-dev over budget: %+v", m)
	}
	wantErr(t, tm.CheckBudget("fe-dev"), ErrBudgetExceeded)
	if task := must(tm.Task("x")); task.Status != TaskOpen {
		t.Fatalf("x after its holder ran out of budget: %s", task.Status)
	}
	msgs := receive(t, tm, "lead")
	var notice, bounce bool
	for _, msg := range msgs {
		switch msg.Type {
		case TypeNotice:
			notice = msg.From == System && strings.Contains(msg.Content, "budget_exceeded") && strings.Contains(msg.Content, "fe-dev used 1001 tokens of its budget of 1000")
		case TypeBounce:
			bounce = msg.Bounced.Content == "unread"
		}
	}
	if !notice || !bounce {
		t.Fatalf("lead's inbox: %+v", msgs)
	}
	wantErr(t, tm.RecordUsage("ghost", 1), ErrUnknownMember)
	wantErr(t, tm.RecordUsage("lead", -1), ErrInvalid)
}

// TestTeamBudget: the team's budget stops every member once spent.
func TestTeamBudget(t *testing.T) {
	_, tm := newTeam(t, Spec{Budget: 500}, "a", "b")
	if err := tm.RecordUsage("a", 300); err != nil {
		t.Fatal(err)
	}
	err := tm.RecordUsage("b", 300)
	wantErr(t, err, ErrBudgetExceeded)
	for _, m := range tm.Members() {
		if m.Status != StatusStopped || m.Reason != ReasonBudgetExceeded || !strings.Contains(m.Detail, "team used 600 tokens of its budget of 500") {
			t.Fatalf("%s: %+v", m.Name, m)
		}
	}
	msgs := must(tm.Inbox("lead", 0))
	if len(msgs) != 1 || msgs[0].Type != TypeNotice {
		t.Fatalf("lead's inbox: %+v", msgs)
	}
	if sum := tm.Summary(); sum.TokensUsed != 600 {
		t.Fatalf("team used %d", sum.TokensUsed)
	}
}
