package team_test

import (
	"fmt"
	"log"
	"os"

	"github.com/skillhost/skillhost/pkg/team"
)

// turn is what an agent-loop driver does for a member the team says has
// mail, minus the model: take its messages, log them as consumed, answer.
func turn(tm *team.Team, answer func(name string, m team.Message)) {
	name, ok := tm.Take()
	if !ok {
		return
	}
	defer tm.Release(name)
	msgs, err := tm.Inbox(name, 0)
	if err != nil {
		log.Fatal(err)
	}
	// Consumed before it is acted on: a crash from here on redelivers
	// nothing, and the driver's own record of the turn (its conversation)
	// would go into the same batch.
	if err := tm.Consume(name, msgs); err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s reads %s from %s: %s\n", name, m.Type, m.From, m.Content)
		answer(name, m)
	}
}

// The pattern's walk-through without a model: the lead spawns two
// teammates, gives one a task, broadcasts, lists the team, reads the
// answers, and shuts both down through the protocol.
func Example() {
	dir, err := os.MkdirTemp("", "team-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := team.Open(team.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	tm, err := store.Create(team.Spec{ID: "webapp", Lead: team.MemberSpec{Name: "lead", Role: "lead"}, Budget: 100_000})
	if err != nil {
		log.Fatal(err)
	}
	for _, spec := range []team.MemberSpec{
		{Name: "fe-dev", Role: "frontend", Profile: "coder"},
		{Name: "be-dev", Role: "backend", Profile: "coder"},
	} {
		if _, err := tm.Spawn("lead", spec); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := tm.Send(team.Message{Type: team.TypeMessage, From: "lead", To: "fe-dev", Content: "build the login page"}); err != nil {
		log.Fatal(err)
	}
	if _, err := tm.Send(team.Message{Type: team.TypeBroadcast, From: "lead", Content: "share your progress"}); err != nil {
		log.Fatal(err)
	}
	members, err := tm.List("lead")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range members {
		fmt.Printf("%s (%s): %s, %d unread\n", m.Name, m.Role, m.Status, m.InboxDepth)
	}
	// What the teammates' models would do: answer the progress request,
	// approve a shutdown. The lead only reads.
	answer := func(name string, m team.Message) {
		reply := team.Message{Type: team.TypeMessage, From: name, To: "lead", Content: "on it"}
		switch {
		case name == "lead", m.Type == team.TypeMessage:
			return
		case m.Type == team.TypeShutdownRequest:
			reply = team.Message{Type: team.TypeShutdownResponse, From: name, To: "lead", RequestID: m.RequestID,
				Approve: new(true), Content: "done, stopping"}
		}
		if _, err := tm.Send(reply); err != nil {
			log.Fatal(err)
		}
	}
	for range 3 { // fe-dev, be-dev, then the lead with their answers
		turn(tm, answer)
	}
	for _, name := range []string{"fe-dev", "be-dev"} {
		if _, err := tm.Send(team.Message{Type: team.TypeShutdownRequest, From: "lead", To: name, Content: "we are done"}); err != nil {
			log.Fatal(err)
		}
	}
	turn(tm, answer)
	turn(tm, answer)
	for _, name := range []string{"fe-dev", "be-dev"} {
		if err := tm.Finish(name); err != nil { // the driver ended its loop
			log.Fatal(err)
		}
	}
	turn(tm, answer)
	for _, m := range tm.Members() {
		fmt.Printf("%s: %s\n", m.Name, m.Status)
	}
	// Output:
	// lead (lead): idle, 0 unread
	// fe-dev (frontend): idle, 2 unread
	// be-dev (backend): idle, 1 unread
	// fe-dev reads message from lead: build the login page
	// fe-dev reads broadcast from lead: share your progress
	// be-dev reads broadcast from lead: share your progress
	// lead reads message from fe-dev: on it
	// lead reads message from be-dev: on it
	// fe-dev reads shutdown_request from lead: we are done
	// be-dev reads shutdown_request from lead: we are done
	// lead reads shutdown_response from fe-dev: done, stopping
	// lead reads shutdown_response from be-dev: done, stopping
	// lead: idle
	// fe-dev: stopped
	// be-dev: stopped
}
