package events

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestFanOutAndLag(t *testing.T) {
	b := New(3)
	fast := b.Subscribe(10)
	slow := b.Subscribe(1)
	for i := 0; i < 5; i++ {
		b.Publish(Event{Type: "lifecycle", Skill: "s"})
	}
	if len(fast.C) != 5 {
		t.Fatalf("fast got %d", len(fast.C))
	}
	if len(slow.C) != 1 || !slow.Lagged() || slow.Lagged() {
		t.Fatalf("slow: %d pending, lag flag wrong", len(slow.C))
	}
	rec := b.Recent()
	if len(rec) != 3 || rec[0].Seq != 3 || rec[2].Seq != 5 {
		t.Fatalf("recent = %+v", rec)
	}
	fast.Close()
	fast.Close()
	if _, ok := <-fast.C; !ok {
		t.Fatal("buffered event lost on close")
	}
	b.Publish(Event{}) // no panic on a closed subscriber
}

func TestPulseCallsAndNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(10)
		sub := b.Subscribe(10)
		defer sub.Close()
		var n atomic.Uint64
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); b.PulseCalls(ctx, time.Second, n.Load) }()

		time.Sleep(3 * time.Second) // no calls: no pulse
		synctest.Wait()
		if len(sub.C) != 0 {
			t.Fatalf("%d pulses with no calls", len(sub.C))
		}
		n.Add(5) // a burst of calls within one period: one pulse with the total
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if len(sub.C) != 1 {
			t.Fatalf("%d pulses after one burst, want 1", len(sub.C))
		}
		if e := <-sub.C; e.Type != "calls" || e.Calls != 5 {
			t.Fatalf("pulse = %+v", e)
		}
		if len(b.Recent()) != 0 {
			t.Fatalf("a pulse was remembered for late joiners: %+v", b.Recent())
		}
		cancel()
		<-done
	})
}

// Publishers racing (the loader, the registry and the call pulse do) still
// deliver seq in order, one apart, to every subscriber and to Recent.
func TestSeqInOrderUnderConcurrentPublishers(t *testing.T) {
	const publishers, each = 8, 500
	b := New(publishers * each)
	sub := b.Subscribe(publishers * each)
	defer sub.Close()
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for range each {
				b.Publish(Event{Type: "lifecycle"})
			}
		})
	}
	wg.Wait()
	for i := uint64(1); i <= publishers*each; i++ {
		if e := <-sub.C; e.Seq != i {
			t.Fatalf("event %d delivered with seq %d", i, e.Seq)
		}
	}
	for i, e := range b.Recent() {
		if e.Seq != uint64(i+1) {
			t.Fatalf("recent[%d] has seq %d", i, e.Seq)
		}
	}
}
