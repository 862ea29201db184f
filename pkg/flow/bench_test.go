package flow

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/runs"
)

// instantModel answers every request at once with a short text that
// differs each time (the stall guard stays quiet).
type instantModel struct {
	mu     sync.Mutex
	n      int
	called chan struct{} // when set, receives on each call
}

func (m *instantModel) Complete(ctx context.Context, _ openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	m.mu.Lock()
	m.n++
	n := m.n
	m.mu.Unlock()
	if m.called != nil {
		m.called <- struct{}{}
		<-ctx.Done()
		return openai.ChatCompletionMessage{}, openai.Usage{}, ctx.Err()
	}
	return openai.ChatCompletionMessage{Content: fmt.Sprintf("turn %d: nothing to add", n)},
		openai.Usage{PromptTokens: 50, CompletionTokens: 10}, nil
}

// roundTimes records when each round starts.
type roundTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (r *roundTimes) Round(string) {
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
}
func (r *roundTimes) Usage(string, string, int64, int64) {}
func (r *roundTimes) Stopped(string, string)             {}

// benchDir is where benchmarks keep their logs: FLOW_BENCH_DIR (a tmpfs
// such as /dev/shm, to leave the disk's fsync out), else a temp folder.
func benchDir(b *testing.B) string {
	if d := os.Getenv("FLOW_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "flowbench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// benchParts is what an engine needs besides its store, built once.
type benchParts struct {
	profiles *agent.Profiles
	flows    *Set
	reg      *registry.Registry
}

func newBenchParts(b *testing.B, doc string) benchParts {
	b.Helper()
	var sb strings.Builder
	sb.WriteString("default: p0\nprofiles:\n")
	for i := range 10 {
		fmt.Fprintf(&sb, "  p%d: {system: You are one of ten.}\n", i)
	}
	profiles, err := agent.ParseProfiles([]byte(sb.String()), "yaml")
	if err != nil {
		b.Fatal(err)
	}
	f, err := Parse("bench", []byte(doc), "yaml", profiles)
	if err != nil {
		b.Fatal(err)
	}
	return benchParts{profiles: profiles, flows: NewSet(f), reg: registry.New(registry.Config{})}
}

func benchEngine(b *testing.B, dir string, p benchParts, model Model, obs Observer) *Engine {
	b.Helper()
	store, err := runs.Open(runs.Config{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewEngine(EngineConfig{Store: store, Registry: p.reg, Profiles: p.profiles, Model: model, Flows: p.flows, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.Close()
		store.Close()
	})
	return e
}

// tenParticipants is a round-robin flow of ten agents, each shown the
// last 10 messages, ending after rounds turns.
func tenParticipants(rounds int) string {
	var sb strings.Builder
	sb.WriteString("participants:\n")
	for i := range 10 {
		fmt.Fprintf(&sb, "  - {name: a%d, profile: p%d, context: {keep: last_n, last: 10}}\n", i, i)
	}
	fmt.Fprintf(&sb, "termination: {max_rounds: %d}\n", rounds)
	return sb.String()
}

// BenchmarkRound is the engine's overhead per round with an instant model
// and ten participants: choose, build the context, log (one fsync), check
// termination and the stall guard. It reports the median round, the log
// bytes per round, and the mean.
func BenchmarkRound(b *testing.B) {
	const rounds = 200
	dir := benchDir(b)
	obs := &roundTimes{}
	e := benchEngine(b, dir, newBenchParts(b, tenParticipants(rounds)), &instantModel{}, obs)
	var logBytes int64
	var total int
	b.ResetTimer()
	for b.Loop() {
		r, err := e.Start("bench", "Discuss nothing in particular.")
		if err != nil {
			b.Fatal(err)
		}
		<-r.Done()
		st, _ := os.Stat(r.Path())
		logBytes += st.Size()
		total += rounds
	}
	b.StopTimer()
	var gaps []time.Duration
	for i := 1; i < len(obs.at); i++ {
		if d := obs.at[i].Sub(obs.at[i-1]); d > 0 {
			gaps = append(gaps, d)
		}
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds()), "p50-µs/round")
		b.ReportMetric(float64(gaps[len(gaps)*9/10].Microseconds()), "p90-µs/round")
	}
	b.ReportMetric(float64(logBytes)/float64(total), "logB/round")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(total), "µs/round")
}

// BenchmarkResume100 is the time from opening the store to the resumed
// run's first model call, for a run of about 100 logged events.
func BenchmarkResume100(b *testing.B) {
	dir := benchDir(b)
	// 33 rounds of choice, usage and message: 1 + 33*3 = 100 events.
	func() {
		e := benchEngine(b, dir, newBenchParts(b, tenParticipants(33)), &instantModel{}, nil)
		r, err := e.Start("bench", "Discuss.")
		if err != nil {
			b.Fatal(err)
		}
		<-r.Done()
	}()
	ents, _ := os.ReadDir(dirRuns(dir))
	src := dirRuns(dir) + "/" + ents[0].Name() + "/log.jsonl"
	full, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	unfinished := strings.Join(lines[:len(lines)-2], "") // drop the stop
	parts := newBenchParts(b, tenParticipants(1000))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		run := dir + "/resume-" + fmt.Sprint(time.Now().UnixNano())
		os.MkdirAll(dirRuns(run)+"/"+ents[0].Name(), 0o700)
		os.WriteFile(dirRuns(run)+"/"+ents[0].Name()+"/log.jsonl", []byte(unfinished), 0o600)
		m := &instantModel{called: make(chan struct{})}
		b.StartTimer()
		e := benchEngine(b, run, parts, m, nil)
		if err := e.Resume(); err != nil {
			b.Fatal(err)
		}
		<-m.called
		b.StopTimer()
		e.Close()
		e.Store().Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(len(lines)-2), "events")
}

func dirRuns(dir string) string { return dir + "/runs" }
