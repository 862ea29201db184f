package agent

import (
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestEstimateTokens(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 1},
		{"abcd", 2},
		{`{"msg":"hello"}`, 5},
		{"住宿费报销标准", 7},
		{"年假，几天？", 6}, // full-width punctuation counts like Han
		{"héllo", 3},  // 4 ASCII → 2, é → 1
		{"こんにちは", 5},
	} {
		if got := EstimateTokens(tt.s); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestEstimateRequestCountsEverything(t *testing.T) {
	base := estimateRequest([]openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, nil)
	withTools := estimateRequest([]openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, toolsPayload(t, "alpha.echo"))
	withCall := estimateRequest([]openai.ChatCompletionMessage{{Role: "user", Content: "hi"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{tc("id", "alpha__echo", strings.Repeat("x", 300))}}}, nil)
	if !(base > 0 && withTools > base+20 && withCall > base+100) {
		t.Fatalf("base %d, with tools %d, with a call %d", base, withTools, withCall)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		v    string
		want time.Duration
	}{
		{"", -1},
		{"0", 0},
		{"7", 7 * time.Second},
		{"soon", -1},
		{"-3", -1},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tt.v, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	p := RetryPolicy{Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}.withDefaults()
	for n, lo := range map[int]time.Duration{1: 80 * time.Millisecond, 2: 160 * time.Millisecond, 3: 320 * time.Millisecond} {
		if w := p.wait(n, -1); w < lo || w > lo*3/2 {
			t.Errorf("wait(%d) = %v, want about %v", n, w, lo*5/4)
		}
	}
	if w := p.wait(20, -1); w > 1200*time.Millisecond {
		t.Errorf("wait(20) = %v, over the cap", w)
	}
	if w := p.wait(1, 5*time.Second); w != time.Second {
		t.Errorf("Retry-After over the cap: %v", w)
	}
	if w := p.wait(1, 0); w != 0 {
		t.Errorf("Retry-After 0: %v", w)
	}
}
