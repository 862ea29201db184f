package team

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/skillhost/skillhost/pkg/runs"
	"go.uber.org/goleak"
)

// crashHelperEnv makes the test binary act as the daemon that
// TestDeliverySIGKILL kills (the helper-process pattern): its value is the
// state folder.
const crashHelperEnv = "TEAM_TEST_CRASH_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		if err := crashHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// newTeam opens a store in a fresh folder with a team "t" led by "lead"
// and teammates named in mates; the store is closed at cleanup.
func newTeam(tb testing.TB, spec Spec, mates ...string) (*Store, *Team) {
	tb.Helper()
	s, err := Open(Config{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if spec.ID == "" {
		spec.ID = "t"
	}
	if spec.Lead.Name == "" {
		spec.Lead.Name = "lead"
	}
	tm, err := s.Create(spec)
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range mates {
		if _, err := tm.Spawn(spec.Lead.Name, MemberSpec{Name: name, Role: "worker", Profile: "default"}); err != nil {
			tb.Fatal(err)
		}
	}
	return s, tm
}

// reopen closes s and opens its folder again: a daemon restart.
func reopen(tb testing.TB, s *Store, id string) (*Store, *Team) {
	tb.Helper()
	dir := s.dir[:len(s.dir)-len("/teams")]
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	s2, err := Open(Config{Dir: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s2.Close() })
	tm, err := s2.Team(id)
	if err != nil {
		tb.Fatal(err)
	}
	return s2, tm
}

// must returns v, or panics with err: for calls in a test's own
// goroutine that are not what the test is about (a panic fails the test
// with the error and where it happened).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// wantErr fails unless err wraps target.
func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

// send sends a plain message and fails the test on an error.
func send(tb testing.TB, tm *Team, from, to, content string) Message {
	tb.Helper()
	return must(tm.Send(Message{Type: TypeMessage, From: from, To: to, Content: content}))
}

// receive reads and consumes every message in name's inbox.
func receive(tb testing.TB, tm *Team, name string) []Message {
	tb.Helper()
	msgs := must(tm.Inbox(name, 0))
	if err := tm.Consume(name, msgs); err != nil {
		tb.Fatal(err)
	}
	return msgs
}

func ptr[T any](v T) *T { return &v }

type runsKind = runs.Kind

// asBounce is errors.As for a *BounceError.
func asBounce(err error, target **BounceError) bool { return errors.As(err, target) }
