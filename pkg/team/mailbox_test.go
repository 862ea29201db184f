package team

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSendReceiveConsume(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	m1 := send(t, tm, "lead", "fe-dev", "build the login page")
	m2 := send(t, tm, Human, "fe-dev", "and make it blue")
	if m1.Seq != 1 || m2.Seq != 2 || m1.ID == "" || m1.ID == m2.ID {
		t.Fatalf("sent %+v and %+v", m1, m2)
	}
	if m := must(tm.Member("fe-dev")); m.InboxDepth != 2 {
		t.Fatalf("inbox depth %d, want 2", m.InboxDepth)
	}
	// Reading does not consume.
	for range 2 {
		if msgs := must(tm.Inbox("fe-dev", 0)); len(msgs) != 2 || msgs[0].Content != "build the login page" || msgs[1].From != Human {
			t.Fatalf("inbox %+v", msgs)
		}
	}
	msgs := must(tm.Inbox("fe-dev", 0))
	// Out of order, or a message twice, is refused.
	wantErr(t, tm.Consume("fe-dev", msgs[1:]), ErrOutOfOrder)
	wantErr(t, tm.Consume("fe-dev", []Message{msgs[0], msgs[0]}), ErrOutOfOrder)
	if err := tm.Consume("fe-dev", msgs[:1], note{Text: "user: build the login page"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tm.Consume("fe-dev", msgs[:1]), ErrOutOfOrder)
	if rest := must(tm.Inbox("fe-dev", 0)); len(rest) != 1 || rest[0].ID != m2.ID {
		t.Fatalf("after consuming the first: %+v", rest)
	}
	// The consumption and the driver's record are in the member's log,
	// one batch.
	evs := must(tm.Events("fe-dev", 0))
	if len(evs) != 2 || evs[0].Kind != "team.consumed" || evs[1].Kind != "test.note" || !evs[0].Time.Equal(evs[1].Time) {
		t.Fatalf("member log %+v", evs)
	}
	// The inbox is a file a person can read.
	b := must(os.ReadFile(filepath.Join(tm.Dir(), "inbox", "fe-dev.jsonl")))
	if strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"content":"and make it blue"`) {
		t.Fatalf("inbox file:\n%s", b)
	}
	_, err := tm.Inbox("nobody", 0)
	wantErr(t, err, ErrUnknownMember)
}

type note struct {
	Text string `json:"text"`
}

func (note) Kind() runsKind { return "test.note" }

// TestSendDedupesSenderIDs: a sender that retries with its own id
// (because it never learned whether the first try landed) delivers once.
func TestSendDedupesSenderIDs(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	for range 3 {
		m := must(tm.Send(Message{ID: "task-1", Type: TypeMessage, From: "lead", To: "fe-dev", Content: "x"}))
		if m.Seq != 1 {
			t.Fatalf("retry got seq %d, want the first delivery's 1", m.Seq)
		}
	}
	if n := len(must(tm.Inbox("fe-dev", 0))); n != 1 {
		t.Fatalf("%d messages after three sends of one id", n)
	}
	receive(t, tm, "fe-dev")
	// Consumed, then retried: still not delivered again.
	must(tm.Send(Message{ID: "task-1", Type: TypeMessage, From: "lead", To: "fe-dev", Content: "x"}))
	if n := len(must(tm.Inbox("fe-dev", 0))); n != 0 {
		t.Fatalf("a retry after consumption was delivered again (%d)", n)
	}
}

func TestBounces(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev")
	_, err := tm.Send(Message{ID: "q1", Type: TypeMessage, From: "fe-dev", To: "ghost", Content: "hello?"})
	wantErr(t, err, ErrUnknownMember)
	var be *BounceError
	if !asBounce(err, &be) || be.To != "ghost" || !strings.Contains(be.Reason, `no member "ghost"`) {
		t.Fatalf("error %v, want a BounceError naming ghost", err)
	}
	msgs := receive(t, tm, "fe-dev")
	if len(msgs) != 1 || msgs[0].Type != TypeBounce || msgs[0].From != System || msgs[0].Bounced.ID != "q1" ||
		!strings.Contains(msgs[0].Content, "ghost") {
		t.Fatalf("fe-dev's inbox: %+v", msgs)
	}

	// A message to a stopped teammate comes back with the reason.
	if err := tm.stopMember("be-dev", ReasonShutdown, ""); err != nil {
		t.Fatal(err)
	}
	_, err = tm.Send(Message{Type: TypeMessage, From: "fe-dev", To: "be-dev", Content: "status?"})
	wantErr(t, err, ErrMemberStopped)
	msgs = receive(t, tm, "fe-dev")
	if len(msgs) != 1 || msgs[0].Type != TypeBounce || !strings.Contains(msgs[0].Content, "stopped (shutdown)") {
		t.Fatalf("fe-dev's inbox: %+v", msgs)
	}
	// The human gets only the error.
	_, err = tm.Send(Message{Type: TypeMessage, From: Human, To: "be-dev"})
	wantErr(t, err, ErrMemberStopped)
	// A stopped sender cannot send.
	_, err = tm.Send(Message{Type: TypeMessage, From: "be-dev", To: "lead"})
	wantErr(t, err, ErrMemberStopped)
	// Nor can anyone forge the team's own types, or send nonsense.
	for _, m := range []Message{
		{Type: TypeBounce, From: "lead", To: "fe-dev"},
		{Type: TypeNotice, From: "lead", To: "fe-dev"},
		{Type: "shout", From: "lead", To: "fe-dev"},
		{Type: TypeMessage, From: "lead"},
		{Type: TypeBroadcast, From: "lead", To: "fe-dev"},
		{Type: TypeShutdownResponse, From: "fe-dev", To: "lead"},
	} {
		_, err := tm.Send(m)
		wantErr(t, err, ErrInvalid)
	}
	_, err = tm.Send(Message{Type: TypeMessage, From: "ghost", To: "lead"})
	wantErr(t, err, ErrUnknownMember)
}

// TestStoppedMembersUnreadMailGoesBack: what a member never read when it
// stopped returns to the senders; nothing stays unread in silence.
func TestStoppedMembersUnreadMailGoesBack(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev")
	send(t, tm, "lead", "fe-dev", "a")
	send(t, tm, "be-dev", "fe-dev", "b")
	if err := tm.stopMember("fe-dev", ReasonShutdown, ""); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"lead", "be-dev"} {
		msgs := receive(t, tm, who)
		if len(msgs) != 1 || msgs[0].Type != TypeBounce || !strings.Contains(msgs[0].Content, "before reading it") {
			t.Fatalf("%s's inbox: %+v", who, msgs)
		}
	}
	if m := must(tm.Member("fe-dev")); m.InboxDepth != 0 {
		t.Fatalf("stopped fe-dev still has %d unread", m.InboxDepth)
	}
}

func TestBroadcast(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev", "qa")
	if err := tm.stopMember("qa", ReasonShutdown, ""); err != nil {
		t.Fatal(err)
	}
	m := must(tm.Send(Message{Type: TypeBroadcast, From: "lead", Content: "share your progress"}))
	for _, who := range []string{"fe-dev", "be-dev"} {
		msgs := receive(t, tm, who)
		if len(msgs) != 1 || msgs[0].ID != m.ID || msgs[0].Type != TypeBroadcast || msgs[0].To != who {
			t.Fatalf("%s got %+v", who, msgs)
		}
	}
	if msgs := must(tm.Inbox("lead", 0)); len(msgs) != 0 {
		t.Fatalf("the lead got its own broadcast or a bounce: %+v", msgs)
	}
}

// TestReadyTakeRelease is the driver's side: one signal channel for the
// whole team, members handed out in the order they got work, none twice,
// and a member that got mail during its turn comes back after Release.
func TestReadyTakeRelease(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "a", "b", "c")
	if _, ok := tm.Take(); ok {
		t.Fatal("Take with no mail anywhere")
	}
	send(t, tm, "lead", "b", "1")
	send(t, tm, "lead", "a", "2")
	send(t, tm, "lead", "b", "3")
	select {
	case <-tm.Ready():
	default:
		t.Fatal("no ready signal after sends")
	}
	select {
	case <-tm.Ready():
		t.Fatal("a burst of sends gave more than one signal")
	default:
	}
	first, _ := tm.Take()
	second, _ := tm.Take()
	if first != "b" || second != "a" {
		t.Fatalf("took %q then %q, want b then a", first, second)
	}
	if name, ok := tm.Take(); ok {
		t.Fatalf("took %q a second time while it runs", name)
	}
	if m := must(tm.Member("b")); m.Status != StatusActive {
		t.Fatalf("b while taken: %s", m.Status)
	}
	receive(t, tm, "b")
	send(t, tm, "lead", "b", "4") // arrives during b's turn
	tm.Release("b")
	receive(t, tm, "a")
	tm.Release("a")
	if m := must(tm.Member("a")); m.Status != StatusIdle {
		t.Fatalf("a after Release: %s", m.Status)
	}
	if name, ok := tm.Take(); !ok || name != "b" {
		t.Fatalf("after Release, took %q, %v; want b with its new mail", name, ok)
	}
	tm.Release("b")
}

// TestIdleMembersHoldNoDescriptors: the logs of members that are not
// running are parked, however much mail they got.
func TestIdleMembersHoldNoDescriptors(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "a", "b")
	send(t, tm, "lead", "a", "x")
	receive(t, tm, "a")
	send(t, tm, "a", "b", "y")
	for _, name := range []string{"lead", "a", "b"} {
		mb := tm.members[name]
		if !mb.inbox.Parked() || !mb.own.Parked() {
			t.Fatalf("%s, idle, holds its files open", name)
		}
	}
	name, _ := tm.Take()
	receive(t, tm, name)
	if tm.members[name].own.Parked() {
		t.Fatalf("%s's log was parked during its turn", name)
	}
	tm.Release(name)
	if !tm.members[name].own.Parked() {
		t.Fatalf("%s's log stayed open after Release", name)
	}
}

// TestStoppedMemberCannotConsume: a loop that outlives its member's stop
// (reaped after the grace) cannot take mail that went back to its
// senders; each message is consumed or bounced, never both.
func TestStoppedMemberCannotConsume(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	send(t, tm, "lead", "fe-dev", "late")
	msgs := must(tm.Inbox("fe-dev", 0))
	if err := tm.stopMember("fe-dev", ReasonShutdown, "grace ran out"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tm.Consume("fe-dev", msgs), ErrMemberStopped)
	var bounced, consumedIDs []string
	for _, ev := range must(tm.Events("fe-dev", 0)) {
		c := must(decodeConsumed(ev))
		if c.Bounced {
			bounced = append(bounced, c.IDs...)
		} else {
			consumedIDs = append(consumedIDs, c.IDs...)
		}
	}
	if len(bounced) != 1 || bounced[0] != msgs[0].ID || len(consumedIDs) != 0 {
		t.Fatalf("fe-dev's log: bounced %v, consumed %v", bounced, consumedIDs)
	}
}

// TestNothingDroppedWhenAMemberStopsUnderLoad: senders race a member's
// stop. Every message ends up read by the member or back with its sender,
// exactly one of the two.
func TestNothingDroppedWhenAMemberStopsUnderLoad(t *testing.T) {
	const senders, each = 6, 40
	names := []string{"w"}
	for i := range senders {
		names = append(names, fmt.Sprintf("s%d", i))
	}
	_, tm := newTeam(t, Spec{}, names...)
	var wg sync.WaitGroup
	var sentOK sync.Map
	for i := range senders {
		from := fmt.Sprintf("s%d", i)
		wg.Go(func() {
			for j := range each {
				id := fmt.Sprintf("%s-%d", from, j)
				_, err := tm.Send(Message{ID: id, Type: TypeMessage, From: from, To: "w"})
				switch {
				case err == nil:
					sentOK.Store(id, true)
				case !errors.Is(err, ErrMemberStopped):
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() { // w reads a third of the mail as it comes, then is stopped
		for n := 0; n < senders*each/3; {
			<-tm.Ready()
			name, ok := tm.Take()
			if !ok {
				continue
			}
			msgs, err := tm.Inbox(name, 5)
			if err == nil {
				err = tm.Consume(name, msgs)
			}
			tm.Release(name)
			if err != nil {
				t.Error(err)
				return
			}
			n += len(msgs)
		}
		if err := tm.stopMember("w", ReasonShutdown, ""); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()

	read := map[string]bool{}
	for _, ev := range must(tm.Events("w", 0)) {
		if c := must(decodeConsumed(ev)); !c.Bounced {
			for _, id := range c.IDs {
				read[id] = true
			}
		}
	}
	back := map[string]int{}
	for i := range senders {
		for _, m := range must(tm.Inbox(fmt.Sprintf("s%d", i), 0)) {
			back[m.Bounced.ID]++
		}
	}
	for i := range senders {
		for j := range each {
			id := fmt.Sprintf("s%d-%d", i, j)
			_, ok := sentOK.Load(id)
			switch {
			case read[id] && back[id] > 0:
				t.Errorf("%s was read and bounced", id)
			case !read[id] && back[id] != 1:
				t.Errorf("%s (Send ok: %v) was neither read nor bounced once (%d bounces)", id, ok, back[id])
			case read[id] && !ok:
				t.Errorf("%s was read but Send said it bounced", id)
			}
		}
	}
	if len(read) == 0 {
		t.Fatal("w read nothing before its stop: the race was not run")
	}
}

// TestConsumeChecksWhatItIsGiven: a driver cannot log as consumed a
// message that is not the inbox's next one, by seq or by id.
func TestConsumeChecksWhatItIsGiven(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev")
	send(t, tm, "lead", "fe-dev", "real")
	wantErr(t, tm.Consume("fe-dev", []Message{{ID: "forged", Seq: 1}}), ErrOutOfOrder)
	wantErr(t, tm.Consume("fe-dev", []Message{{ID: "forged", Seq: 2}}), ErrOutOfOrder)
	wantErr(t, tm.Consume("ghost", []Message{{ID: "x", Seq: 1}}), ErrUnknownMember)
	if len(must(tm.Events("fe-dev", 0))) != 0 {
		t.Fatal("a refused Consume wrote to the member's log")
	}
}

// TestStoreTakeServesEveryTeam: one driver pool over all teams, woken by
// the store's one channel, hands out members of every team in turn.
func TestStoreTakeServesEveryTeam(t *testing.T) {
	s, a := newTeam(t, Spec{ID: "a"}, "x")
	b := must(s.Create(Spec{ID: "b", Lead: MemberSpec{Name: "lead"}}))
	must(b.Spawn("lead", MemberSpec{Name: "y"}))
	if _, _, ok := s.Take(); ok {
		t.Fatal("Take with no mail anywhere")
	}
	send(t, a, "lead", "x", "1")
	send(t, b, "lead", "y", "2")
	<-s.Ready()
	got := map[string]bool{}
	for {
		tm, name, ok := s.Take()
		if !ok {
			break
		}
		got[tm.ID()+"/"+name] = true
		tm.Release(name) // unread: back in its team's queue, not handed out again here
		if len(got) == 2 {
			break
		}
	}
	if !got["a/x"] || !got["b/y"] {
		t.Fatalf("took %v, want a/x and b/y", got)
	}
}
