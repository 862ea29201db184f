package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/skillhost/skillhost/pkg/runs"
)

// An engine logs each step before it acts on it; after a restart the log
// says which calls already have their results, so none is made twice.
func Example() {
	state, err := os.MkdirTemp("", "runs-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)

	store, err := runs.Open(runs.Config{Dir: state})
	if err != nil {
		log.Fatal(err)
	}
	run, err := store.Create(runs.Started{Type: "flow", Name: "code-interpreter"})
	if err != nil {
		log.Fatal(err)
	}
	// One round: the choice and why, the reply with its tool call and
	// usage (one batch, one fsync), then the call's result.
	_, err = run.Append(
		runs.SpeakerChoice{Speaker: "runner", Mode: "graph", Reason: "coder → runner: the reply holds a code block"},
		runs.Message{Sender: "runner", Role: "assistant", Content: "running it"},
		runs.ToolCall{CallID: "call-1", Participant: "runner", Tool: "code__run", Arguments: json.RawMessage(`{"code":"fib(39)"}`)},
		runs.Usage{Participant: "runner", PromptTokens: 100, CompletionTokens: 20},
	)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := run.Append(runs.ToolResult{CallID: "call-1", Result: json.RawMessage(`63245986`)}); err != nil {
		log.Fatal(err)
	}
	store.Close() // the daemon goes away

	store, err = runs.Open(runs.Config{Dir: state})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	unfinished, err := store.Unfinished()
	if err != nil {
		log.Fatal(err)
	}
	run = unfinished[0]
	if res, ok := run.Result("call-1"); ok {
		fmt.Println("call-1 already answered:", string(res.Result))
	}
	if err := run.Stop(runs.StopCompleted, "63245986 found"); err != nil {
		log.Fatal(err)
	}
	sum := run.Summary()
	fmt.Println(sum.Status, sum.StopReason, sum.Usage["runner"].Total, "tokens")

	// Follow the run as GET /v1/runs/{id}/events does after a reconnect
	// with Last-Event-ID: 4.
	sub := run.Subscribe(4)
	for {
		ev, err := sub.Next(context.Background())
		if err != nil {
			break // io.EOF after the stop event
		}
		fmt.Println(ev.Seq, ev.Kind)
	}
	// Output:
	// call-1 already answered: 63245986
	// stopped completed 120 tokens
	// 5 usage
	// 6 tool_result
	// 7 stop
}

// inboxMessage is a kind a package built on the log declares for itself,
// as pkg/team would for a member's inbox.
type inboxMessage struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Text string `json:"text"`
}

func (inboxMessage) Kind() runs.Kind { return "team.inbox_message" }

// A Log on its own: any stream that wants the run log's guarantees, with
// its own kinds, replayed on open and followed without a goroutine.
func ExampleLog() {
	dir, err := os.MkdirTemp("", "runs-example-log")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := dir + "/fe-dev.inbox.jsonl"

	l, err := runs.OpenLog(path, runs.LogOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := l.Append(inboxMessage{ID: "m1", From: "lead", Text: "build the login page"}); err != nil {
		log.Fatal(err)
	}
	_, changed, _ := l.Read(1, 0) // caught up: wait on changed for more
	if _, err := l.Append(inboxMessage{ID: "m2", From: "lead", Text: "share your progress"}); err != nil {
		log.Fatal(err)
	}
	<-changed // closed by the append
	l.Close()

	l, err = runs.OpenLog(path, runs.LogOptions{MustExist: true, Replay: func(ev runs.Event) error {
		m, err := runs.Decode[inboxMessage](ev)
		fmt.Println(ev.Seq, ev.Kind, m.ID, m.Text)
		return err
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	// Output:
	// 1 team.inbox_message m1 build the login page
	// 2 team.inbox_message m2 share your progress
}
