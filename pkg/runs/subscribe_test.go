package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// next reads one event with a deadline far beyond any honest wait, so a
// hang fails the test instead of stalling it.
func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("Next after seq %d: %v", sub.LastSeq(), err)
	}
	return ev
}

func TestSubscribePastThenLive(t *testing.T) {
	s, _ := newTestStore(t)
	r, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	round(t, r, 1) // seqs 2..6
	sub, err := s.Subscribe(r.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(1); want <= 6; want++ {
		if ev := next(t, sub); ev.Seq != want {
			t.Fatalf("got seq %d, want %d", ev.Seq, want)
		}
	}
	// Caught up: the next event comes when it is appended, whether the
	// follower was already waiting in Next or comes to it after.
	got := make(chan Event, 1)
	errs := make(chan error, 1)
	go func() {
		ev, err := sub.Next(context.Background())
		if err != nil {
			errs <- err
			return
		}
		got <- ev
	}()
	if _, err := r.Append(Message{Sender: "admin", Content: "live"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if m, err := Decode[Message](ev); ev.Seq != 7 || err != nil || m.Content != "live" {
			t.Fatalf("live event %+v (%v)", ev, err)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the live event never came")
	}
	if err := r.Stop(StopExternal, "test"); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, sub); ev.Kind != KindStop {
		t.Fatalf("after the stop: %+v", ev)
	}
	if _, err := sub.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the stop event: %v, want io.EOF", err)
	}
}

// TestSubscribeResume is the SSE reconnect: a follower that saw up to seq
// k and comes back with Last-Event-ID k gets k+1 on, nothing twice, also
// after a restart when the run is finished and its file closed.
func TestSubscribeResume(t *testing.T) {
	s, dir := newTestStore(t)
	r, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		round(t, r, i)
	}
	first := r.Subscribe(0)
	for range 4 {
		next(t, first)
	}
	resumed := r.Subscribe(first.LastSeq())
	if ev := next(t, resumed); ev.Seq != 5 {
		t.Fatalf("resumed at seq %d, want 5", ev.Seq)
	}
	if err := r.Stop(StopCompleted, ""); err != nil {
		t.Fatal(err)
	}
	last := r.Summary().LastSeq
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	sub, err := s2.Subscribe(r.ID(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(11); want <= last; want++ {
		if ev := next(t, sub); ev.Seq != want {
			t.Fatalf("after restart: seq %d, want %d", ev.Seq, want)
		}
	}
	if _, err := sub.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("end of a finished run: %v, want io.EOF", err)
	}
	// Resuming past the stop is the end at once.
	end, err := s2.Subscribe(r.ID(), last)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := end.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("resume after the stop: %v", err)
	}
	if _, err := s2.Subscribe("nope", 0); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("unknown run: %v", err)
	}
}

// TestSlowSubscriberNeverBlocksAppends appends far more than a batch while
// a subscriber reads nothing, then lets it catch up: every append returned
// at once, and the subscriber still gets every event, in order.
func TestSlowSubscriberNeverBlocksAppends(t *testing.T) {
	s, _ := newTestStore(t)
	r, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	sub := r.Subscribe(0)
	next(t, sub) // the subscriber has started, then stalls
	big := make([]byte, 4<<10)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	const n = 200 // 200 × 4 KiB: several of the subscriber's batches
	for i := range n {
		if _, err := r.Append(Message{Sender: "coder", Content: fmt.Sprint(i, string(big))}); err != nil {
			t.Fatal(err)
		}
	}
	for want := uint64(2); want <= n+1; want++ {
		ev := next(t, sub)
		if ev.Seq != want {
			t.Fatalf("seq %d, want %d", ev.Seq, want)
		}
		if len(sub.buf) > subscriptionBatch/len(big)+1 {
			t.Fatalf("subscriber holds %d events, more than one batch", len(sub.buf))
		}
	}
}

func TestSubscribeWakesOnCancelAndClose(t *testing.T) {
	s, _ := newTestStore(t)
	r, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	sub := r.Subscribe(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sub.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	errs := make(chan error, 1)
	go func() {
		_, err := sub.Next(context.Background())
		errs <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Next during close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not wake the follower")
	}
}

// TestSubscribeReportsDamage damages a finished run's file behind the
// store's back: a follower gets the good events, then an error naming the
// file and offset, not a silent end.
func TestSubscribeReportsDamage(t *testing.T) {
	s, _ := newTestStore(t)
	r := finishedRun(t, s, "demo", StopCompleted, "")
	off := flipBit(t, r.Path(), 2, 20)
	sub := r.Subscribe(0)
	for want := uint64(1); want <= 2; want++ {
		if ev := next(t, sub); ev.Seq != want {
			t.Fatalf("seq %d, want %d", ev.Seq, want)
		}
	}
	_, err := sub.Next(context.Background())
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != r.Path() || ce.Offset != off {
		t.Fatalf("Next over a damaged record: %v, want a CorruptError at %s offset %d", err, r.Path(), off)
	}
}
