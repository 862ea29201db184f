package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// round appends one typical group-chat round: a choice, a model reply
// that calls a tool, the tool's result and the model's usage.
func round(t testing.TB, r *Run, n int) {
	t.Helper()
	id := fmt.Sprintf("call-%d", n)
	if _, err := r.Append(
		SpeakerChoice{Speaker: "coder", Mode: "selector", Candidates: []string{"coder", "reviewer"}, Reason: "the admin asked for code", Round: n},
		Message{Sender: "coder", Role: "assistant", Content: "Running the code block now."},
		ToolCall{CallID: id, Participant: "coder", Tool: "code__run", Arguments: json.RawMessage(`{"code":"fib(39)"}`)},
		Usage{Participant: "coder", PromptTokens: 120, CompletionTokens: 30},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ToolResult{CallID: id, Result: json.RawMessage(`{"stdout":"63245986"}`)}); err != nil {
		t.Fatal(err)
	}
}

func TestStoreRunLifecycle(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.Create(Started{Type: "flow", Name: "code-interpreter", Input: json.RawMessage(`{"task":"fib 39"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(Started{Type: "flow", Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(a.ID()) || !ValidID(b.ID()) || a.ID() >= b.ID() {
		t.Fatalf("ids %q, %q: want valid and in creation order", a.ID(), b.ID())
	}
	if a.Path() != filepath.Join(dir, "runs", a.ID(), "log.jsonl") {
		t.Fatalf("log at %s", a.Path())
	}
	round(t, a, 1)
	round(t, a, 2)
	if _, err := a.Append(HumanInputWait{Prompt: "approve?", From: "admin"}); err != nil {
		t.Fatal(err)
	}
	if sum := a.Summary(); sum.Status != StatusWaiting || sum.Waiting == nil || sum.Waiting.Prompt != "approve?" {
		t.Fatalf("waiting run: %+v", sum)
	}
	if _, err := a.Append(HumanInput{Content: "yes"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(StopCompleted, "the reviewer approved"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done is open after the stop")
	}

	sum := a.Summary()
	if sum.Status != StatusStopped || sum.StopReason != StopCompleted || sum.StopDetail != "the reviewer approved" ||
		sum.Type != "flow" || sum.Name != "code-interpreter" || sum.Rounds != 2 || sum.Speaker != "coder" || sum.LastSeq != 14 {
		t.Fatalf("summary %+v", sum)
	}
	if u := sum.Usage["coder"]; u != (Tokens{Prompt: 240, Completion: 60, Total: 300, Calls: 2}) {
		t.Fatalf("coder usage %+v", u)
	}
	var lines []string
	for _, turn := range sum.Transcript {
		lines = append(lines, turn.Sender+"/"+turn.Role+": "+turn.Content)
	}
	if want := "coder/assistant: Running the code block now.|coder/assistant: Running the code block now.|human/user: yes"; strings.Join(lines, "|") != want {
		t.Fatalf("transcript %q", lines)
	}
	if res, ok := a.Result("call-2"); !ok || string(res.Result) != `{"stdout":"63245986"}` {
		t.Fatalf("Result(call-2) = %+v, %v", res, ok)
	}

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != a.ID() || list[1].ID != b.ID() || list[0].Transcript != nil || list[1].Status != StatusRunning {
		t.Fatalf("List = %+v", list)
	}
	un, err := s.Unfinished()
	if err != nil || len(un) != 1 || un[0] != b {
		t.Fatalf("Unfinished = %v, %v; want only %s", un, err, b.ID())
	}
	// The log is the file the docs describe: one JSON object per line.
	raw, err := os.ReadFile(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		var rec struct {
			Seq  int    `json:"seq"`
			Kind string `json:"kind"`
			CRC  uint32 `json:"crc"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.CRC == 0 {
			t.Fatalf("line %q: %v", line, err)
		}
		kinds = append(kinds, rec.Kind)
	}
	if kinds[0] != "started" || kinds[len(kinds)-1] != "stop" || len(kinds) != 14 {
		t.Fatalf("kinds in the file: %v", kinds)
	}
}

// TestRunRules checks what Append refuses, and that a refused batch
// writes nothing.
func TestRunRules(t *testing.T) {
	s, _ := newTestStore(t)
	for _, tc := range []struct {
		name  string
		setup []Payload
		batch []Payload
		want  error  // errors.Is target, or nil to match text
		text  string // substring of the error
	}{
		{"result twice", []Payload{ToolCall{CallID: "c", Tool: "t"}, ToolResult{CallID: "c"}}, []Payload{ToolResult{CallID: "c"}}, ErrDuplicateResult, `"c"`},
		{"result twice in one batch", []Payload{ToolCall{CallID: "c", Tool: "t"}}, []Payload{ToolResult{CallID: "c"}, ToolResult{CallID: "c"}}, ErrDuplicateResult, "payload 2 of 2"},
		{"result without call", nil, []Payload{ToolResult{CallID: "nope"}}, ErrUnknownCall, `"nope"`},
		{"call id reused", []Payload{ToolCall{CallID: "c", Tool: "t"}}, []Payload{ToolCall{CallID: "c", Tool: "t"}}, ErrDuplicateCall, ""},
		{"human input while running", nil, []Payload{HumanInput{Content: "hi"}}, ErrNotWaiting, ""},
		{"anything after stop", []Payload{Stop{Reason: StopMaxRounds}}, []Payload{Message{Sender: "a"}}, ErrStopped, ""},
		{"stop twice", []Payload{Stop{Reason: StopMaxRounds}}, []Payload{Stop{Reason: StopExternal}}, ErrStopped, ""},
		{"good then bad", nil, []Payload{Message{Sender: "a", Content: "x"}, Usage{Participant: "a", PromptTokens: -1}}, nil, "non-negative"},
		{"stop without reason", nil, []Payload{Stop{}}, nil, "stop_reason"},
		{"second start", nil, []Payload{Started{Type: "flow"}}, nil, "already started"},
		{"message without sender", nil, []Payload{Message{Content: "x"}}, nil, "no sender"},
		{"nil pointer", nil, []Payload{(*Message)(nil)}, nil, "nil *runs.Message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.Create(Started{Type: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.setup) > 0 {
				if _, err := r.Append(tc.setup...); err != nil {
					t.Fatal(err)
				}
			}
			before := r.Summary().LastSeq
			_, err = r.Append(tc.batch...)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), r.ID()) {
				t.Fatalf("Append = %v, want %v naming the run and %q", err, tc.want, tc.text)
			}
			evs, err := r.Events(0)
			if err != nil || uint64(len(evs)) != before || r.Summary().LastSeq != before {
				t.Fatalf("a refused batch changed the log: %d events, %v", len(evs), err)
			}
		})
	}
	// Accepted: a call and its result in one batch, a pointer payload, a
	// wait and its answer, an extension kind the state does not know.
	r, err := s.Create(Started{Type: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ToolCall{CallID: "x", Tool: "t"}, &ToolResult{CallID: "x", Result: json.RawMessage(`1`)},
		note{"ext"}, HumanInputWait{}, HumanInput{Content: "ok"}, Transition{From: "a", To: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Result("x"); !ok || r.Status() != StatusRunning || len(r.Pending()) != 0 {
		t.Fatalf("after the good batch: result %v, status %s, pending %v", ok, r.Status(), r.Pending())
	}
	if _, err := s.Create(Started{}); err == nil {
		t.Fatal("created a run without a type")
	}
}

// TestStoreResumeAfterRestart closes a store with runs in every state and
// opens the folder again, as a restarted daemon does.
func TestStoreResumeAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := s.Create(Started{Type: "flow"})
	waiting, _ := s.Create(Started{Type: "flow"})
	running, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	round(t, done, 1)
	if err := done.Stop(StopMaxRounds, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := waiting.Append(HumanInputWait{Prompt: "go on?"}); err != nil {
		t.Fatal(err)
	}
	round(t, running, 1)
	if _, err := running.Append(ToolCall{CallID: "in-flight", Participant: "runner", Tool: "code__run"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := running.Append(Message{Sender: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after store close: %v", err)
	}
	if _, err := s.Run(done.ID()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after store close: %v", err)
	}

	s2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	un, err := s2.Unfinished()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range un {
		ids = append(ids, r.ID())
	}
	if want := []string{waiting.ID(), running.ID()}; !slices.Equal(ids, want) {
		t.Fatalf("Unfinished = %v, want %v", ids, want)
	}
	w, r := un[0], un[1]
	if w.Status() != StatusWaiting {
		t.Fatalf("waiting run came back %s", w.Status())
	}
	if _, err := w.Append(HumanInput{Content: "yes", Sender: "ops"}); err != nil {
		t.Fatal(err)
	}
	if p := r.Pending(); len(p) != 1 || p[0].CallID != "in-flight" {
		t.Fatalf("pending calls %+v", p)
	}
	if _, ok := r.Result("call-1"); !ok {
		t.Fatal("the logged result of call-1 is gone after the restart")
	}
	// A finished run's file is closed once loaded: another writer could
	// take its lock.
	d, err := s2.Run(done.ID())
	if err != nil || d.Summary().StopReason != StopMaxRounds {
		t.Fatalf("finished run: %v", err)
	}
	l, err := OpenLog(d.Path(), LogOptions{MustExist: true})
	if err != nil {
		t.Fatalf("a finished run's log is still held: %v", err)
	}
	l.Close()
	// An unfinished run's file is held: a second daemon cannot write it.
	s3, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if _, err := s3.Run(r.ID()); !errors.Is(err, ErrLocked) {
		t.Fatalf("second store on the same folder: %v, want ErrLocked", err)
	}
}

func TestStoreUnknownAndBrokenRuns(t *testing.T) {
	s, dir := newTestStore(t)
	for _, id := range []string{"", "../../etc", "20261205T234618.123Z-3f9a1c/..", "20261305T234618.123Z-3f9a1c", "20261205T234618.123Z-3F9A1C"} {
		if _, err := s.Run(id); !errors.Is(err, ErrUnknownRun) {
			t.Errorf("Run(%q) = %v, want ErrUnknownRun", id, err)
		}
	}
	if _, err := s.Run("20261205T234618.123Z-3f9a1c"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("missing run: %v", err)
	}
	good, _ := s.Create(Started{Type: "flow"})
	round(t, good, 1)
	bad, _ := s.Create(Started{Type: "flow"})
	round(t, bad, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	flipBit(t, bad.Path(), 2, 10)
	s2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	list, err := s2.List()
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), bad.ID()) {
		t.Fatalf("List error %v, want a CorruptError naming %s", err, bad.ID())
	}
	if len(list) != 1 || list[0].ID != good.ID() {
		t.Fatalf("List kept %+v, want the good run", list)
	}
	if _, err := Open(Config{}); err == nil {
		t.Fatal("Open without a folder")
	}
}

// TestRunConcurrentWritersAndReaders has several goroutines append to one
// run while others read it: every append lands once, in seq order, and
// -race sees no unguarded access.
func TestRunConcurrentWritersAndReaders(t *testing.T) {
	s, _ := newTestStore(t)
	r, err := s.Create(Started{Type: "team"})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := r.Append(Message{Sender: fmt.Sprint("w", w), Content: fmt.Sprint(i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range each {
				_ = r.Summary()
				_, _ = r.Result("none")
				if _, err := r.Events(0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs, err := r.Events(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+writers*each {
		t.Fatalf("%d events, want %d", len(evs), 1+writers*each)
	}
	next := map[string]int{}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if ev.Kind != KindMessage {
			continue
		}
		m, _ := Decode[Message](ev)
		if m.Content != fmt.Sprint(next[m.Sender]) {
			t.Fatalf("%s's messages out of order at seq %d", m.Sender, ev.Seq)
		}
		next[m.Sender]++
	}
}

// finishedRun creates a run named name, logs one round and stops it.
func finishedRun(t testing.TB, s *Store, name, reason, detail string) *Run {
	t.Helper()
	r, err := s.Create(Started{Type: "flow", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	round(t, r, 1)
	if err := r.Stop(reason, detail); err != nil {
		t.Fatal(err)
	}
	return r
}

// flipBit flips a bit at byte at of the record after the first n records
// of the file, and returns where that record starts.
func flipBit(t testing.TB, path string, n, at int) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := offsetOfRecord(b, n)
	b[off+at] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return int64(off)
}

// TestSummaryJSON pins the field names GET /v1/runs/{id} and the SSE
// stream show.
func TestSummaryJSON(t *testing.T) {
	s, _ := newTestStore(t)
	r := finishedRun(t, s, "demo", StopTokens, "over 10000 tokens")
	b, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"id": r.ID(), "type": "flow", "name": "demo", "status": "stopped",
		"stop_reason": "token_budget", "stop_detail": "over 10000 tokens", "last_seq": 7.0, "rounds": 1.0} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	usage, _ := got["usage"].(map[string]any)
	coder, _ := usage["coder"].(map[string]any)
	if coder["prompt_tokens"] != 120.0 || coder["completion_tokens"] != 30.0 || coder["total_tokens"] != 150.0 {
		t.Errorf("usage %v", got["usage"])
	}
	turns, _ := got["transcript"].([]any)
	if len(turns) != 1 || turns[0].(map[string]any)["sender"] != "coder" || turns[0].(map[string]any)["seq"] != 3.0 {
		t.Errorf("transcript %v", got["transcript"])
	}
	evs, err := r.Events(6)
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	if b, _ := json.Marshal(evs[0]); !strings.HasPrefix(string(b), `{"seq":7,"time":"`) || !strings.HasSuffix(string(b), `"kind":"stop","data":{"reason":"token_budget","detail":"over 10000 tokens"}}`) {
		t.Errorf("event JSON %s", b)
	}
}

// TestStoreKeepsFewFinishedRuns: past KeepFinished, the store lets go of
// the oldest finished runs' states, lists them from their kept summaries,
// and reads one again from its file when it is asked for.
func TestStoreKeepsFewFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir, KeepFinished: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := range 4 {
		ids = append(ids, finishedRun(t, s, fmt.Sprint("run ", i), StopCompleted, "").ID())
	}
	open, err := s.Create(Started{Type: "flow"})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	loaded := len(s.runs)
	_, oldest := s.runs[ids[0]]
	s.mu.Unlock()
	if loaded != 3 || oldest {
		t.Fatalf("%d runs in memory (the oldest finished one among them: %v), want 2 finished and the open one", loaded, oldest)
	}
	list, err := s.List()
	if err != nil || len(list) != 5 || list[0].Name != "run 0" || list[0].StopReason != StopCompleted || list[4].ID != open.ID() {
		t.Fatalf("List = %+v, %v", list, err)
	}
	r, err := s.Run(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if sum := r.Summary(); sum.Name != "run 0" || len(sum.Transcript) != 1 || !r.Stopped() {
		t.Fatalf("a finished run read again: %+v", sum)
	}
	un, err := s.Unfinished()
	if err != nil || len(un) != 1 || un[0] != open {
		t.Fatalf("Unfinished = %v, %v", un, err)
	}
	s.mu.Lock()
	loaded = len(s.runs)
	s.mu.Unlock()
	if loaded != 3 {
		t.Fatalf("%d runs in memory after reading one back, want 3", loaded)
	}
}
