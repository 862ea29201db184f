package team

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// crashHelper is the child side of TestDeliverySIGKILL: a tiny daemon
// that reopens team "crash" and, for ever, has the lead send the worker
// message m<i> (with its own id, as a retrying sender does), then runs
// the worker's turn (Take, Inbox, Consume, Release) on every other round,
// printing "sent m<i>" and "consumed m<a> m<b> ..." once each step is
// durable. It starts by sending again the last three messages the inbox
// holds, as a sender that never learned whether they arrived would.
func crashHelper(dir string) error {
	s, err := Open(Config{Dir: dir})
	if err != nil {
		return err
	}
	tm, err := s.Team("crash")
	if err != nil {
		return err
	}
	inbox, err := os.ReadFile(filepath.Join(tm.Dir(), "inbox", "worker.jsonl"))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for i := max(1, bytes.Count(inbox, []byte("\n"))-2); ; i++ {
		if _, err := tm.Send(Message{ID: fmt.Sprintf("m%d", i), Type: TypeMessage, From: "lead", To: "worker", Content: "work"}); err != nil {
			return err
		}
		fmt.Fprintf(out, "sent m%d\n", i)
		// A resent message that was there already makes no work: the
		// worker may have nothing to take.
		if name, ok := tm.Take(); ok && i%2 == 0 {
			msgs, err := tm.Inbox(name, 1)
			if err != nil {
				return err
			}
			if err := tm.Consume(name, msgs); err != nil {
				return err
			}
			tm.Release(name)
			if len(msgs) == 0 {
				return errors.New("the worker was ready with an empty inbox")
			}
			ids := make([]string, len(msgs))
			for j, m := range msgs {
				ids[j] = m.ID
			}
			fmt.Fprintf(out, "consumed %s\n", strings.Join(ids, " "))
		} else if ok {
			tm.Release(name)
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// TestDeliverySIGKILL kills a real daemon process (this test binary,
// re-executed) with SIGKILL in the middle of a loop of sends and
// receives, five times, each child resuming what the last one left. Then
// it drains the inbox and checks delivery was exactly-once by id: every
// message ever sent is in the inbox once, and the worker's log consumed
// each exactly once, including every one a child acknowledged.
func TestDeliverySIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	dir := t.TempDir()
	s, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tm := must(s.Create(Spec{ID: "crash", Lead: MemberSpec{Name: "lead"}}))
	must(tm.Spawn("lead", MemberSpec{Name: "worker"}))
	if err := s.Close(); err != nil { // release the team's lock for the child
		t.Fatal(err)
	}

	sent := map[string]bool{}     // a child said the send was durable
	consumed := map[string]bool{} // a child said the consumption was durable
	lines := 0
	for round := 1; round <= 5; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		sc := bufio.NewScanner(stdout)
		target := lines + 30 + 7*round // a different point in the loop each round
		read := func() {
			line := sc.Text()
			lines++
			switch verb, rest, _ := strings.Cut(line, " "); verb {
			case "sent":
				sent[rest] = true
			case "consumed":
				for _, id := range strings.Fields(rest) {
					if consumed[id] {
						t.Fatalf("round %d: %s consumed twice (child said %q)", round, id, line)
					}
					consumed[id] = true
				}
			default:
				t.Fatalf("child said %q", line)
			}
		}
		for sc.Scan() {
			read()
			if lines >= target {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		for sc.Scan() {
			read()
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, want SIGKILL; stderr:\n%s", round, err, stderr.String())
		}
	}

	// Restart once more, and let the worker take what is left.
	s2, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	tm2 := must(s2.Team("crash"))
	rest := must(tm2.Inbox("worker", 0))
	for _, m := range rest {
		if consumed[m.ID] {
			t.Fatalf("%s was acknowledged as consumed but is delivered again after the restart", m.ID)
		}
	}
	if err := tm2.Consume("worker", rest); err != nil {
		t.Fatal(err)
	}

	inbox := map[string]int{}
	var n int
	for _, m := range must(tm2.History("worker", 0)) {
		inbox[m.ID]++
		n++
	}
	logged := map[string]int{}
	for _, ev := range must(tm2.Events("worker", 0)) {
		c := must(decodeConsumed(ev))
		for _, id := range c.IDs {
			logged[id]++
		}
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("m%d", i)
		if inbox[id] != 1 || logged[id] != 1 {
			t.Errorf("%s: %d times in the inbox, consumed %d times; want 1 and 1", id, inbox[id], logged[id])
		}
	}
	if len(inbox) != n || len(logged) != n {
		t.Errorf("inbox holds %d ids in %d records, the log consumed %d", len(inbox), n, len(logged))
	}
	for id := range sent {
		if inbox[id] != 1 {
			t.Errorf("%s was acknowledged as sent but is in the inbox %d times", id, inbox[id])
		}
	}
	if len(sent) < 60 || len(consumed) < 30 {
		t.Fatalf("only %d sends and %d consumptions acknowledged: the loop hardly ran", len(sent), len(consumed))
	}
	t.Logf("%d messages, %d acknowledged sends, %d acknowledged consumptions, %d left for the last restart",
		n, len(sent), len(consumed), len(rest))
}
