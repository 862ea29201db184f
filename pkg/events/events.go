package events

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Event is one change. Type is "lifecycle" (a skill version changed state),
// "registry" (the tool set changed), "calls" (calls were made since the
// last such event; Calls is the running total) or "nested_call" (a call a
// tool made through the host failed or was refused: Caller called Tool,
// with the ids that tie it to its parent call, and Code says why). Restart
// is set on the lifecycle event of a version that went active again after a
// crash, so a watcher counts restarts from a field rather than from Reason's
// wording.
type Event struct {
	Seq     uint64  `json:"seq"`
	Type    string  `json:"type"`
	Skill   string  `json:"skill,omitempty"`
	Version string  `json:"version,omitempty"`
	State   string  `json:"state,omitempty"`
	From    string  `json:"from,omitempty"`
	PID     int     `json:"pid,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Restart bool    `json:"restart,omitempty"`
	Tools   int     `json:"tools,omitempty"`
	DurMS   float64 `json:"duration_ms,omitempty"`
	Calls   uint64  `json:"calls,omitempty"`
	// A nested_call event's own fields.
	Caller       string    `json:"caller,omitempty"`
	Tool         string    `json:"tool,omitempty"`
	Code         string    `json:"code,omitempty"`
	CallID       string    `json:"call_id,omitempty"`
	ParentCallID string    `json:"parent_call_id,omitempty"`
	Time         time.Time `json:"time"`
}

// Bus fans events out to subscribers and keeps the most recent ones for
// late joiners (the console's timeline).
type Bus struct {
	mu     sync.Mutex // guards seq, subs and recent
	seq    uint64
	subs   map[*Subscription]struct{}
	recent []Event
	keep   int
}

// New returns a bus that remembers the last keep events.
func New(keep int) *Bus {
	return &Bus{subs: map[*Subscription]struct{}{}, keep: keep}
}

// Subscription receives events on C until Close.
type Subscription struct {
	C      <-chan Event
	c      chan Event
	bus    *Bus
	lagged atomic.Bool
	once   sync.Once
}

// Lagged reports (and clears) whether events were dropped because the
// subscriber was slow.
func (s *Subscription) Lagged() bool { return s.lagged.Swap(false) }

// Close ends the subscription and closes C. Safe to call twice.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		close(s.c)
	})
}

// Subscribe returns a subscription with room for buf pending events.
func (b *Bus) Subscribe(buf int) *Subscription {
	c := make(chan Event, buf)
	s := &Subscription{C: c, c: c, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Publish stamps e with a sequence number (and a time if it has none) and
// hands it to every subscriber that has room.
func (b *Bus) Publish(e Event) { b.publish(e, true) }

// Notify is Publish for an event that late joiners need not see (a pulse
// of call counts): it is not remembered among the recent events.
func (b *Bus) Notify(e Event) { b.publish(e, false) }

func (b *Bus) publish(e Event, remember bool) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Numbered under the lock that orders delivery, so that every
	// subscriber, and Recent, sees seq rise by one per event even when
	// the loader, the registry and the call pulse publish at once.
	b.seq++
	e.Seq = b.seq
	if remember && b.keep > 0 {
		if len(b.recent) >= b.keep {
			copy(b.recent, b.recent[1:])
			b.recent = b.recent[:b.keep-1]
		}
		b.recent = append(b.recent, e)
	}
	for s := range b.subs {
		select {
		case s.c <- e:
		default:
			s.lagged.Store(true)
		}
	}
}

// Recent returns the remembered events, oldest first.
func (b *Bus) Recent() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.recent...)
}

// PulseCalls notifies subscribers with a "calls" event, at most once per
// every, whenever total() moved, until ctx ends. Call counts change with
// every call, far too often for an event each; a pulse lets a watcher (the
// console's counters) follow them without polling.
func (b *Bus) PulseCalls(ctx context.Context, every time.Duration, total func() uint64) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := total()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := total(); n != last {
				last = n
				b.Notify(Event{Type: "calls", Calls: n})
			}
		}
	}
}
