package runs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// note is an extension payload, as pkg/team would declare one.
type note struct {
	Text string `json:"text"`
}

func (note) Kind() Kind { return "test.note" }

// writeLog appends n notes to a new log at path and closes it.
func writeLog(t *testing.T, path string, n int) {
	t.Helper()
	l, err := OpenLog(path, LogOptions{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := l.Append(note{Text: fmt.Sprint("note ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// replayLog opens path and returns the notes it replays.
func replayLog(t *testing.T, path string) (*Log, []string, error) {
	t.Helper()
	var got []string
	l, err := OpenLog(path, LogOptions{MustExist: true, Replay: func(ev Event) error {
		n, err := Decode[note](ev)
		got = append(got, n.Text)
		return err
	}})
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	return l, got, err
}

func TestLogAppendReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenLog(path, LogOptions{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := l.Append(note{"one"}, note{"two"}, &note{"three"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Seq != 1 || evs[2].Seq != 3 || evs[1].Kind != "test.note" {
		t.Fatalf("appended %+v", evs)
	}
	if _, err := l.Append(note{"four"}); err != nil {
		t.Fatal(err)
	}
	read, _, err := l.Read(2, 0)
	if err != nil || len(read) != 2 || read[0].Seq != 3 || string(read[1].Data) != `{"text":"four"}` {
		t.Fatalf("Read(2) = %+v, %v", read, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(note{"late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}

	l2, got, err := replayLog(t, path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"one", "two", "three", "four"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("replayed %q, want %q", got, want)
	}
	if l2.Repaired() != nil || l2.LastSeq() != 4 {
		t.Fatalf("clean reopen: repaired %+v, last seq %d", l2.Repaired(), l2.LastSeq())
	}
	if evs, err := l2.Append(note{"five"}); err != nil || evs[0].Seq != 5 {
		t.Fatalf("append after reopen: %+v, %v", evs, err)
	}
}

func TestLogRefusesBadPayloads(t *testing.T) {
	l, err := OpenLog(filepath.Join(t.TempDir(), "log.jsonl"), LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, p := range map[string]Payload{
		"bad kind": badKind{},
		"too big":  note{Text: strings.Repeat("x", MaxRecordBytes)},
		"nil":      nil,
		"null":     (*note)(nil),
	} {
		if _, err := l.Append(note{"ok"}, p); err == nil {
			t.Errorf("%s: appended", name)
		}
	}
	if l.LastSeq() != 0 {
		t.Fatalf("a refused batch wrote %d records", l.LastSeq())
	}
}

type badKind struct{}

func (badKind) Kind() Kind { return "Not A Kind" }

// TestLogCutsTornTail damages the end of a good log in the ways a crash
// (or a stray writer) does and checks that open cuts exactly the damage,
// keeps every record before it, and appends after it.
func TestLogCutsTornTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte // returns the new file content
		keep   int                   // records expected to survive of 5
	}{
		{"cut mid-record", func(b []byte) []byte { return b[:len(b)-20] }, 4},
		{"cut before newline", func(b []byte) []byte { return b[:len(b)-1] }, 4},
		{"garbage appended", func(b []byte) []byte { return append(b, "\x01garbage{{"...) }, 5},
		{"garbage lines appended", func(b []byte) []byte { return append(b, "junk\n{\"seq\":6}\n\n"...) }, 5},
		{"zeros appended", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, 5},
		{"last record bit flip", func(b []byte) []byte { b[len(b)-30] ^= 4; return b }, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			writeLog(t, path, 5)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			good := b[:offsetOfRecord(b, tc.keep)]
			if err := os.WriteFile(path, tc.damage(bytes.Clone(b)), 0o600); err != nil {
				t.Fatal(err)
			}
			l, got, err := replayLog(t, path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.keep || l.LastSeq() != uint64(tc.keep) {
				t.Fatalf("kept %d records (%q), want %d", len(got), got, tc.keep)
			}
			rep := l.Repaired()
			if rep == nil || rep.Offset != int64(len(good)) || rep.Cut <= 0 || rep.Reason == "" {
				t.Fatalf("repair %+v, want a cut at %d", rep, len(good))
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, good) {
				t.Fatalf("file after repair:\n%q\nwant the good prefix:\n%q", after, good)
			}
			if evs, err := l.Append(note{"next"}); err != nil || evs[0].Seq != uint64(tc.keep+1) {
				t.Fatalf("append after repair: %+v, %v", evs, err)
			}
		})
	}
}

// offsetOfRecord returns where record n+1 starts (the end of the first n).
func offsetOfRecord(b []byte, n int) int {
	off := 0
	for range n {
		off += bytes.IndexByte(b[off:], '\n') + 1
	}
	return off
}

// TestLogReportsMidFileCorruption damages a record that good records
// follow: open must fail naming the file and offset, and leave the file
// as it was.
func TestLogReportsMidFileCorruption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		reason string
	}{
		{"bit flip in record 3", func(b []byte) []byte { b[offsetOfRecord(b, 2)+40] ^= 1; return b }, "crc mismatch"},
		{"record 3 removed", func(b []byte) []byte {
			return append(b[:offsetOfRecord(b, 2):offsetOfRecord(b, 2)], b[offsetOfRecord(b, 3):]...)
		}, "seq 4, want 3"},
		{"garbage line inserted", func(b []byte) []byte {
			o := offsetOfRecord(b, 2)
			return append(append(bytes.Clone(b[:o]), "oops\n"...), b[o:]...)
		}, "no crc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			writeLog(t, path, 5)
			b, _ := os.ReadFile(path)
			want := int64(offsetOfRecord(b, 2))
			damaged := tc.damage(bytes.Clone(b))
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := replayLog(t, path)
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("open: %v, want a CorruptError", err)
			}
			if ce.Path != path || ce.Offset != want || ce.After != 2 || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("CorruptError %+v, want %s at offset %d after seq 2 for %q", ce, path, want, tc.reason)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "offset "+strconv.FormatInt(want, 10)) {
				t.Fatalf("message %q does not name the file and offset", msg)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, damaged) {
				t.Fatal("open changed a corrupt file")
			}
		})
	}
}

func TestLogIsLockedAgainstASecondWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(path, LogOptions{}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second open: %v, want ErrLocked naming the file", err)
	}
	l.Close()
	l2, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	l2.Close()
}

func TestLogReadBatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	writeLog(t, path, 20)
	l, _, err := replayLog(t, path)
	if err != nil {
		t.Fatal(err)
	}
	// One record is about 100 bytes: a 250-byte budget gives at most two.
	var seqs []uint64
	for after := uint64(0); ; {
		evs, _, err := l.Read(after, 250)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		if len(evs) > 2 {
			t.Fatalf("Read(%d, 250) returned %d records", after, len(evs))
		}
		for _, ev := range evs {
			seqs = append(seqs, ev.Seq)
		}
		after = evs[len(evs)-1].Seq
	}
	if len(seqs) != 20 || seqs[0] != 1 || seqs[19] != 20 {
		t.Fatalf("batched reads gave seqs %v", seqs)
	}
	// A budget smaller than one record still returns that record.
	if evs, _, err := l.Read(0, 1); err != nil || len(evs) != 1 {
		t.Fatalf("Read(0, 1) = %d records, %v", len(evs), err)
	}
}

// crashHelper is the child side of TestCrashSafetySIGKILL: a tiny engine
// that resumes run id and, for ever, logs a tool call, "makes" it, logs its
// result, and prints "ack N" once the result is durable. A call logged
// without a result (the previous child was killed between the two) gets
// its result first, as a resuming engine would.
func crashHelper(dir, id string) error {
	s, err := Open(Config{Dir: dir})
	if err != nil {
		return err
	}
	r, err := s.Run(id)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for _, c := range r.Pending() {
		if _, err := r.Append(ToolResult{CallID: c.CallID, Result: []byte(`"late"`)}); err != nil {
			return err
		}
	}
	for i := 1; ; i++ {
		id := fmt.Sprintf("c%d", i)
		if _, ok := r.Result(id); ok {
			continue
		}
		if _, err := r.Append(ToolCall{CallID: id, Participant: "runner", Tool: "count"}); err != nil {
			return err
		}
		if _, err := r.Append(ToolResult{CallID: id, Result: []byte(strconv.Itoa(i))}); err != nil {
			return err
		}
		fmt.Fprintf(out, "ack %d\n", i)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// TestCrashSafetySIGKILL runs a real writer process (this test binary,
// re-executed), kills it with SIGKILL while it appends, and reopens the
// run: every record the child acknowledged must be there, in order, and
// the log must go on. Three kills in a row, each child resuming the log
// the previous one left.
func TestCrashSafetySIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	s, dir := newTestStore(t)
	r, err := s.Create(Started{Type: "test"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.ID()
	if err := s.Close(); err != nil { // release the file lock for the child
		t.Fatal(err)
	}
	acked := map[int]bool{} // calls a child acknowledged: their results were durable
	last := 0               // the highest acknowledged
	ack := func(line string) error {
		n, err := strconv.Atoi(strings.TrimPrefix(line, "ack "))
		if err != nil {
			return fmt.Errorf("child said %q", line)
		}
		acked[n] = true
		last = max(last, n)
		return nil
	}
	for round := 1; round <= 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir, crashRunEnv+"="+id)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Should the test fail before its SIGKILL, the child still dies
		// (and the later Wait reaps it).
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// Kill once the child acknowledged 40 more calls: it is then in
		// the middle of its next append.
		sc := bufio.NewScanner(stdout)
		target := last + 40
		for sc.Scan() {
			if err := ack(sc.Text()); err != nil {
				t.Fatal(err)
			}
			if last >= target {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		for sc.Scan() { // drain what the child printed before it died
			if err := ack(sc.Text()); err != nil {
				t.Fatal(err)
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child ended with %v, want SIGKILL; stderr:\n%s", round, err, stderr.String())
		}
		if last < target {
			t.Fatalf("round %d: child acknowledged up to call %d before dying, want %d; stderr:\n%s", round, last, target, stderr.String())
		}

		s2, err := Open(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := s2.Run(id)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		// A resumed engine makes only the calls whose results are not
		// logged: every acknowledged call's is, with its own value, so
		// none of them would run twice. Calls the next child finds
		// without a result (killed between call and result) get "late".
		for i := 1; i <= last; i++ {
			res, ok := r2.Result(fmt.Sprintf("c%d", i))
			switch {
			case acked[i] && (!ok || string(res.Result) != strconv.Itoa(i)):
				t.Fatalf("round %d: call c%d was acknowledged but the log has result %q (found %v)", round, i, res.Result, ok)
			case !acked[i] && !ok && i < last:
				t.Fatalf("round %d: call c%d lost its result", round, i)
			}
		}
		evs, err := r2.Events(0)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("round %d: event %d has seq %d", round, i, ev.Seq)
			}
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLogFailedWriteIsSticky breaks the file under the log (its
// descriptor closed behind its back, as a failing disk would fail a
// write): the append fails, every later one fails the same way, a
// follower is told instead of waiting, and reopening the file goes on.
func TestLogFailedWriteIsSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(note{"kept"}); err != nil {
		t.Fatal(err)
	}
	l.f.Close()
	_, err = l.Append(note{"lost"})
	if err == nil || !strings.Contains(err.Error(), "write failed") || !strings.Contains(err.Error(), path) {
		t.Fatalf("append on a broken file: %v", err)
	}
	if _, err2 := l.Append(note{"again"}); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second append: %v, want the first failure again", err2)
	}
	if evs, _, rerr := l.Read(0, 0); rerr != nil || len(evs) != 1 {
		t.Fatalf("reading the durable part: %d events, %v", len(evs), rerr)
	}
	if _, _, rerr := l.Read(1, 0); rerr == nil || rerr.Error() != err.Error() {
		t.Fatalf("a caught-up reader: %v, want the write failure", rerr)
	}
	l.f = nil // already closed above
	l2, got, err := replayLog(t, path)
	if err != nil || len(got) != 1 || got[0] != "kept" {
		t.Fatalf("reopen: %q, %v", got, err)
	}
	if _, err := l2.Append(note{"after"}); err != nil {
		t.Fatal(err)
	}
}

// TestLogGroupCommit stalls the first fsync while five more appenders
// write, then lets it go: the five share one more fsync instead of five,
// nobody sees a record before it is durable, and every record is there
// in the order it was written.
func TestLogGroupCommit(t *testing.T) {
	l, err := OpenLog(filepath.Join(t.TempDir(), "log.jsonl"), LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var syncs atomic.Int32
	inSync, release := make(chan struct{}), make(chan struct{})
	l.syncFile = func(f *os.File) error {
		if syncs.Add(1) == 1 {
			close(inSync)
			<-release
		}
		return f.Sync()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	appendNote := func(text string) {
		if _, err := l.Append(note{text}); err != nil {
			errs <- err
		}
	}
	wg.Go(func() { appendNote("leader") })
	<-inSync
	for i := range 5 {
		wg.Go(func() { appendNote(fmt.Sprint("follower ", i)) })
	}
	// Wait for the five to have written (they then queue for the fsync).
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		written := l.wseq
		l.mu.Unlock()
		if written == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("followers wrote %d records of 5", written-1)
		}
		runtime.Gosched()
	}
	if evs, _, err := l.Read(0, 0); len(evs) != 0 || err != nil {
		t.Fatalf("a reader saw %d records before their fsync (%v)", len(evs), err)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 6 appends, want 2 (the stalled one and one shared by the followers)", n)
	}
	evs, _, err := l.Read(0, 0)
	if err != nil || len(evs) != 6 {
		t.Fatalf("read back %d records, %v", len(evs), err)
	}
	seen := map[string]bool{}
	for i, ev := range evs {
		n, _ := Decode[note](ev)
		if ev.Seq != uint64(i+1) || seen[n.Text] {
			t.Fatalf("record %d: seq %d, %q", i, ev.Seq, n.Text)
		}
		seen[n.Text] = true
	}
	if !seen["leader"] || len(seen) != 6 {
		t.Fatalf("records %v", seen)
	}
}
