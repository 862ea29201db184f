package team

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/agent"
)

// instantModel answers at once: fe-dev says "pong"; the lead says "ok"
// and reports each pong it is shown.
type instantModel struct{ pong chan struct{} }

func (m instantModel) Complete(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	usage := openai.Usage{PromptTokens: 1, CompletionTokens: 1}
	if strings.Contains(req.Messages[0].Content, "You are fe-dev,") {
		return say("pong"), usage, nil
	}
	if strings.Contains(req.Messages[len(req.Messages)-1].Content, "pong") {
		m.pong <- struct{}{}
	}
	return say("ok"), usage, nil
}

// BenchmarkDriverRoundTrip measures a message from the lead to a teammate
// and the teammate's answer back to the lead's loop, through the Driver
// with a model that answers at once: the lead's send (durable), the
// driver's wake-up and take, fe-dev's turn (its mail consumed with the
// turn's user message, one model call, its answer logged and sent to the
// lead), and the lead's turn up to its model call. Latency is until the
// lead's model is shown the answer.
func BenchmarkDriverRoundTrip(b *testing.B) {
	profiles, err := agent.ParseProfiles([]byte(teamProfilesYAML), "yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tm, err := s.Create(Spec{ID: "t", Lead: MemberSpec{Name: "lead", Profile: "lead"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tm.Spawn("lead", MemberSpec{Name: "fe-dev", Profile: "frontend"}); err != nil {
		b.Fatal(err)
	}
	model := instantModel{pong: make(chan struct{}, 1)}
	d, err := NewDriver(DriverConfig{Store: s, Registry: registryOf(b), Profiles: profiles, Model: model, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := tm.Send(Message{Type: TypeMessage, From: "lead", To: "fe-dev", Content: "ping"}); err != nil {
			b.Fatal(err)
		}
		<-model.pong
		lat = append(lat, time.Since(start))
		// Let the lead's turn end before the next ping, so each round
		// trip starts from idle members.
		if _, err := tm.WaitMembers(ctx, []string{"lead", "fe-dev"}, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
