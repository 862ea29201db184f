package loader

import (
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// notifyingStore is a StateStore changed behind the loader's back, as a
// fleet's shared store is by another host.
type notifyingStore struct {
	*LocalStateStore
	changes chan struct{}
}

func (s *notifyingStore) Changes() <-chan struct{} { return s.changes }

// TestStateNotifierRescans changes decisions in the store only (no API
// call, no file event, no watcher, no resync) and finds the loader acting
// on them once the store says they changed.
func TestStateNotifierRescans(t *testing.T) {
	store := &notifyingStore{LocalStateStore: NewStateStore(), changes: make(chan struct{}, 1)}
	h := newHarness(t, func(c *Config) { c.State = store; c.Watch = false })
	h.install("alpha", "1.0.0", nil)
	h.install("alpha", "2.0.0", nil)
	h.start()
	h.waitVersion("alpha", "2.0.0", 10*time.Second)

	change := func(fn func(*Decision)) {
		t.Helper()
		if err := store.Update("alpha", fn); err != nil {
			t.Fatal(err)
		}
		store.changes <- struct{}{}
	}
	change(func(d *Decision) { d.Pin = "1.0.0" })
	h.waitVersion("alpha", "1.0.0", 10*time.Second)

	change(func(d *Decision) { d.Disabled = true })
	if !testenv.WaitFor(10*time.Second, func() bool {
		_, ok := h.reg.Snapshot().Tool("alpha.echo")
		return h.status("alpha").Disabled && !ok
	}) {
		t.Fatalf("alpha still serves after the store disabled it: %+v", h.status("alpha"))
	}

	change(func(d *Decision) { *d = Decision{} })
	h.waitVersion("alpha", "2.0.0", 10*time.Second)
}
