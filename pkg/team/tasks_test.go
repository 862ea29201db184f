package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTaskDependencies(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "fe-dev", "be-dev")
	ts := must(tm.CreateTasks("lead",
		TaskSpec{ID: "ui", Title: "login page", Deps: []string{"api"}}, // a dependency later in the batch
		TaskSpec{ID: "api", Title: "login API"},
		TaskSpec{ID: "e2e", Title: "end-to-end test", Deps: []string{"ui", "api"}},
	))
	if ts[0].Status != TaskBlocked || ts[1].Status != TaskOpen || ts[2].Status != TaskBlocked {
		t.Fatalf("statuses %s %s %s", ts[0].Status, ts[1].Status, ts[2].Status)
	}
	_, err := tm.Claim("fe-dev", "ui", 0)
	wantErr(t, err, ErrNotClaimable)
	got := must(tm.Claim("be-dev", "api", 0))
	if got.Owner != "be-dev" || must(tm.Member("be-dev")).CurrentTask != "api" {
		t.Fatalf("claimed %+v", got)
	}
	_, err = tm.Claim("be-dev", "ui", 0)
	wantErr(t, err, ErrHoldsTask)
	_, err = tm.Complete("fe-dev", "api", "done")
	wantErr(t, err, ErrNotClaimant)
	must(tm.Complete("be-dev", "api", "POST /login"))
	if task := must(tm.Task("ui")); task.Status != TaskOpen {
		t.Fatalf("ui after its dependency completed: %s", task.Status)
	}
	if m := must(tm.Member("be-dev")); m.CurrentTask != "" {
		t.Fatalf("be-dev still holds %q", m.CurrentTask)
	}
	next, ok := must2(tm.ClaimNext("fe-dev", 0))
	if !ok || next.ID != "ui" {
		t.Fatalf("ClaimNext = %+v, %v", next, ok)
	}
	must(tm.Fail("fe-dev", "ui", "the design is missing"))
	if e2e := must(tm.Task("e2e")); e2e.Status != TaskFailed || !strings.Contains(e2e.Error, `"ui" failed`) {
		t.Fatalf("e2e after ui failed: %+v", e2e)
	}
	if _, ok := must2(tm.ClaimNext("be-dev", 0)); ok {
		t.Fatal("ClaimNext found a task on a board with none open")
	}
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// TestTaskBoardRefusesBadGraphs reports every problem of a batch at once
// and writes none of it.
func TestTaskBoardRefusesBadGraphs(t *testing.T) {
	_, tm := newTeam(t, Spec{})
	must(tm.CreateTasks("lead", TaskSpec{ID: "base", Title: "base"}))
	_, err := tm.CreateTasks("lead",
		TaskSpec{ID: "a", Title: "a", Deps: []string{"b"}},
		TaskSpec{ID: "b", Title: "b", Deps: []string{"c", "base"}},
		TaskSpec{ID: "c", Title: "c", Deps: []string{"a"}},
		TaskSpec{ID: "self", Title: "self", Deps: []string{"self"}},
		TaskSpec{ID: "d", Title: "d", Deps: []string{"nowhere"}},
		TaskSpec{ID: "base", Title: "again"},
		TaskSpec{ID: "e"},
	)
	for _, want := range []error{ErrDependencyCycle, ErrUnknownDependency, ErrTaskExists, ErrInvalid} {
		wantErr(t, err, want)
	}
	for _, part := range []string{"[a b c a]", "[self self]", `"nowhere"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error does not name %s:\n%v", part, err)
		}
	}
	if n := len(tm.Tasks()); n != 1 {
		t.Fatalf("a refused batch left %d tasks", n)
	}
	_, err = tm.CreateTasks("ghost", TaskSpec{Title: "x"})
	wantErr(t, err, ErrUnknownMember)
}

// TestClaimIsAtomic has many members race for one task, then for a board
// of tasks: no task is ever held by two, and each is done exactly once.
func TestClaimIsAtomic(t *testing.T) {
	const members, tasks = 16, 200
	var names []string
	for i := range members {
		names = append(names, fmt.Sprintf("w%d", i))
	}
	_, tm := newTeam(t, Spec{}, names...)

	must(tm.CreateTasks("lead", TaskSpec{ID: "prize", Title: "one task"}))
	var wins atomic.Int32
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			_, err := tm.Claim(n, "prize", 0)
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, ErrNotClaimable):
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d members hold the one task", wins.Load())
	}
	winner := must(tm.Task("prize")).Owner
	must(tm.Complete(winner, "prize", "mine"))

	var specs []TaskSpec
	for i := range tasks {
		specs = append(specs, TaskSpec{ID: fmt.Sprintf("t%d", i), Title: "work"})
	}
	must(tm.CreateTasks("lead", specs...))
	var mu sync.Mutex
	doneBy := map[string]string{}
	for _, n := range names {
		wg.Go(func() {
			for {
				task, ok, err := tm.ClaimNext(n, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := doneBy[task.ID]; dup {
					t.Errorf("%s claimed by %s and by %s", task.ID, prev, n)
				}
				doneBy[task.ID] = n
				mu.Unlock()
				if _, err := tm.Complete(n, task.ID, "ok by "+n); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if len(doneBy) != tasks {
		t.Fatalf("%d of %d tasks done", len(doneBy), tasks)
	}
	for _, task := range tm.Tasks()[1:] {
		if task.Status != TaskCompleted || task.Result != "ok by "+doneBy[task.ID] {
			t.Fatalf("task %+v, claimed by %s", task, doneBy[task.ID])
		}
	}
}

// TestLeaseExpires: a member that claims a task and dies (never renews,
// never completes) loses it when its lease runs out, and another takes it
// over; the one that renews keeps it. Fake time.
func TestLeaseExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tm := newTeam(t, Spec{}, "dead", "alive", "keen")
		must(tm.CreateTasks("lead", TaskSpec{ID: "a", Title: "a"}, TaskSpec{ID: "b", Title: "b"}))
		must(tm.Claim("dead", "a", time.Minute))
		must(tm.Claim("alive", "b", time.Minute))
		time.Sleep(59 * time.Second)
		_, err := tm.Claim("keen", "a", time.Minute)
		wantErr(t, err, ErrNotClaimable)
		must(tm.Renew("alive", "b", time.Minute))
		time.Sleep(time.Second)
		got := must(tm.Claim("keen", "a", time.Minute))
		if got.Owner != "keen" {
			t.Fatalf("a after the lease ran out: %+v", got)
		}
		_, err = tm.Claim("keen", "b", time.Minute)
		wantErr(t, err, ErrHoldsTask)
		_, err = tm.Complete("dead", "a", "too late")
		wantErr(t, err, ErrNotClaimant)
		if m := must(tm.Member("dead")); m.CurrentTask != "" {
			t.Fatalf("dead still shows task %q", m.CurrentTask)
		}
		// A lapsed lease nobody took over still lets its holder finish.
		time.Sleep(2 * time.Minute)
		must(tm.Complete("alive", "b", "late but mine"))
		// The expiry is in the log, naming whose lease ran out.
		evs, _ := must2(tm.log.Read(0, 0))
		var expired []string
		for _, ev := range evs {
			if ev.Kind == (taskClaimed{}).Kind() {
				if c := must(decodeTeamEvent(ev)).(taskClaimed); c.Expired != "" {
					expired = append(expired, c.ID+":"+c.Expired)
				}
			}
		}
		if strings.Join(expired, ",") != "a:dead" {
			t.Fatalf("expiries logged: %v", expired)
		}
	})
}

// TestStoppedMemberReleasesItsTask: a member stopped while holding a task
// gives it back at once, rather than after its lease.
func TestStoppedMemberReleasesItsTask(t *testing.T) {
	_, tm := newTeam(t, Spec{}, "a", "b")
	must(tm.CreateTasks("lead", TaskSpec{ID: "x", Title: "x"}))
	must(tm.Claim("a", "x", time.Hour))
	if err := tm.stopMember("a", ReasonShutdown, ""); err != nil {
		t.Fatal(err)
	}
	if got := must(tm.Claim("b", "x", 0)); got.Owner != "b" {
		t.Fatalf("x after its holder stopped: %+v", got)
	}
	_, err := tm.Claim("a", "x", 0)
	wantErr(t, err, ErrMemberStopped)
}

// TestWaitTasks: the lead waits on channels, not a poll; it wakes when
// the last task is done, and a wait that cannot end times out. Fake time.
func TestWaitTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tm := newTeam(t, Spec{}, "a", "b")
		must(tm.CreateTasks("lead", TaskSpec{ID: "x", Title: "x"}, TaskSpec{ID: "y", Title: "y"}))
		var got []Task
		var werr error
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			got, werr = tm.WaitTasks(context.Background(), []string{"x", "y"}, time.Hour)
		}()
		must(tm.Claim("a", "x", 0))
		must(tm.Claim("b", "y", 0))
		must(tm.Complete("a", "x", "X"))
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("WaitTasks returned with y still claimed")
		default:
		}
		must(tm.Fail("b", "y", "no"))
		<-returned
		if werr != nil || got[0].Result != "X" || got[1].Status != TaskFailed {
			t.Fatalf("WaitTasks = %+v, %v", got, werr)
		}

		must(tm.CreateTasks("lead", TaskSpec{ID: "z", Title: "z"}))
		start := time.Now()
		_, err := tm.WaitTasks(context.Background(), []string{"z"}, 30*time.Second)
		wantErr(t, err, ErrTimeout)
		if waited := time.Since(start); waited != 30*time.Second {
			t.Fatalf("waited %s, want the 30s timeout", waited)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = tm.WaitTasks(ctx, []string{"z"}, 0)
		wantErr(t, err, context.Canceled)
		_, err = tm.WaitTasks(context.Background(), []string{"nope"}, 0)
		wantErr(t, err, ErrUnknownTask)
	})
}

// TestWaitMembers: the lead waits until teammates finished their turns
// and read their mail.
func TestWaitMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, tm := newTeam(t, Spec{}, "a", "b")
		send(t, tm, "lead", "a", "go")
		send(t, tm, "lead", "b", "go")
		var got []Member
		var werr error
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			got, werr = tm.WaitMembers(context.Background(), []string{"a", "b"}, time.Minute)
		}()
		for range 2 {
			name, _ := tm.Take()
			receive(t, tm, name)
			synctest.Wait()
			select {
			case <-returned:
				t.Fatalf("WaitMembers returned while %s runs", name)
			default:
			}
			tm.Release(name)
		}
		<-returned
		if werr != nil || got[0].Status != StatusIdle || got[1].InboxDepth != 0 {
			t.Fatalf("WaitMembers = %+v, %v", got, werr)
		}
		send(t, tm, "lead", "a", "again") // unread: a has work
		_, err := tm.WaitMembers(context.Background(), []string{"a"}, time.Second)
		wantErr(t, err, ErrTimeout)
	})
}
