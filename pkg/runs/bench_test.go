package runs

import (
	"os"
	"sync/atomic"
	"testing"
)

// The benchmarks write to b.TempDir(), so TMPDIR decides the file system
// (and with it what an fsync costs): tmpfs makes fsync free and the
// figures meaningless for durability.

// BenchmarkAppend is one event appended and fsynced: the latency an
// engine pays per logged step.
func BenchmarkAppend(b *testing.B) {
	s, _ := newTestStore(b)
	r, err := s.Create(Started{Type: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	m := Message{Sender: "coder", Role: "assistant", Content: "Here is the code: ```js\nfib(39)\n```"}
	for b.Loop() {
		if _, err := r.Append(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendRound is one typical round as an engine logs it: the
// speaker choice, the reply with its tool call and usage in one batch
// (one fsync), then the tool's result (a second fsync). It reports the
// log's growth per round and per event.
func BenchmarkAppendRound(b *testing.B) {
	s, _ := newTestStore(b)
	r, err := s.Create(Started{Type: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for b.Loop() {
		n++
		round(b, r, n)
	}
	st, err := os.Stat(r.Path())
	if err != nil {
		b.Fatal(err)
	}
	events := r.Summary().LastSeq - 1 // less the started event
	b.ReportMetric(float64(st.Size())/float64(n), "bytes/round")
	b.ReportMetric(float64(st.Size())/float64(events), "bytes/event")
}

// BenchmarkResume100 is the time to resume a run of 100 logged events
// after a restart: open the store, load the run (read, check every CRC,
// replay into its state) and ask it for a logged result.
func BenchmarkResume100(b *testing.B) {
	s, dir := newTestStore(b)
	r, err := s.Create(Started{Type: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; r.Summary().LastSeq < 96; i++ {
		round(b, r, i)
	}
	for r.Summary().LastSeq < 100 {
		if _, err := r.Append(Message{Sender: "admin", Content: "go on"}); err != nil {
			b.Fatal(err)
		}
	}
	id := r.ID()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s2, err := Open(Config{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		r2, err := s2.Run(id)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := r2.Result("call-1"); !ok {
			b.Fatal("call-1 has no result after replay")
		}
		if err := s2.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFsyncFloor is the floor under BenchmarkAppend: the same
// number of bytes written to a plain file and fsynced, with no encoding,
// CRC or lock. The difference is this package's own cost.
func BenchmarkWriteFsyncFloor(b *testing.B) {
	f, err := os.OpenFile(b.TempDir()+"/floor", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := make([]byte, 160)
	line[len(line)-1] = '\n'
	for b.Loop() {
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel is many goroutines appending to one log (a
// team lead's inbox with every member writing to it): group commit lets
// them share fsyncs, so ns/op is the cost per append, not per fsync.
func BenchmarkAppendParallel(b *testing.B) {
	l, err := OpenLog(b.TempDir()+"/log.jsonl", LogOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var syncs atomic.Int64
	l.syncFile = func(f *os.File) error {
		syncs.Add(1)
		return f.Sync()
	}
	b.SetParallelism(8) // 8 × GOMAXPROCS appenders
	b.RunParallel(func(pb *testing.PB) {
		m := Message{Sender: "fe-dev", Content: "progress: the login page renders"}
		for pb.Next() {
			if _, err := l.Append(m); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(l.LastSeq())/float64(max(syncs.Load(), 1)), "appends/fsync")
}
