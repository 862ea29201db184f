package events

import "testing"

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
