package events_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/events"
)

// Example shows the bus from a watcher's side: subscribe, receive what is
// published, notice when a slow reader lost events, and read the recent
// ones a late joiner starts from.
func Example() {
	bus := events.New(2) // remember the last two events for late joiners

	sub := bus.Subscribe(8)
	defer sub.Close()

	bus.Publish(events.Event{Type: "lifecycle", Skill: "calc", Version: "1.0.0", State: "active"})
	bus.Publish(events.Event{Type: "lifecycle", Skill: "calc", Version: "1.0.0", State: "crashed"})
	bus.Publish(events.Event{Type: "lifecycle", Skill: "calc", Version: "1.0.0", State: "active", Restart: true})
	for range 3 {
		e := <-sub.C
		fmt.Println(e.Seq, e.Type, e.Skill, e.State, e.Restart)
	}

	// A subscriber without room loses events instead of stalling the
	// publisher, and is told so: it should refetch the state.
	slow := bus.Subscribe(1)
	defer slow.Close()
	bus.Notify(events.Event{Type: "calls", Calls: 10}) // a pulse: not remembered
	bus.Notify(events.Event{Type: "calls", Calls: 12})
	fmt.Println("slow lagged:", slow.Lagged(), "kept:", (<-slow.C).Calls)

	for _, e := range bus.Recent() {
		fmt.Println("recent:", e.Seq, e.State)
	}
	// Output:
	// 1 lifecycle calc active false
	// 2 lifecycle calc crashed false
	// 3 lifecycle calc active true
	// slow lagged: true kept: 10
	// recent: 2 crashed
	// recent: 3 active
}
