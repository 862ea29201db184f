package flow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/runs"
)

func TestRoundRobinTextMention(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: coder, profile: coder}
termination: {text_mention: TERMINATE}
`, map[string][]answer{
		"admin": {say("please write it"), say("thanks. TERMINATE")},
		"coder": {say("here it is")},
	})
	sum := h.wait(h.start("do the thing"))
	if sum.StopReason != ReasonTextMention || speakers(sum) != "admin,coder,admin" {
		t.Fatalf("stop %q, speakers %s; want text_mention after admin,coder,admin", sum.StopReason, speakers(sum))
	}
	if u := sum.Usage["admin"]; u.Calls != 2 || u.Total != 40 {
		t.Errorf("admin usage %+v, want 2 calls, 40 tokens", u)
	}
	for _, c := range choices(t, (*storeT)(h.store).mustRun(t, sum.ID)) {
		if c.Reason == "" || c.Mode != string(ModeRoundRobin) {
			t.Errorf("choice %+v: want a round_robin choice with a reason", c)
		}
	}
	// The coder saw the task and the admin's message, marked with its sender.
	req := h.model.requests("coder")[0]
	if got := req.Messages[len(req.Messages)-1].Content; got != "admin: please write it" || req.Messages[1].Content != "do the thing" {
		t.Errorf("coder's context ends %q (task %q)", got, req.Messages[1].Content)
	}
}

// mustRun is Store.Run for tests.
func (s *storeT) mustRun(t *testing.T, id string) *runs.Run {
	t.Helper()
	r, err := (*runs.Store)(s).Run(id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type storeT runs.Store

func TestMaxRoundsAndContextPolicy(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: coder, profile: coder, context: {keep: last_n, last: 1}}
termination: {max_rounds: 4}
`, map[string][]answer{
		"admin": {say("a1"), say("a2")},
		"coder": {say("c1"), say("c2")},
	})
	sum := h.wait(h.start("task"))
	if sum.StopReason != ReasonMaxRounds || len(sum.Transcript) != 4 {
		t.Fatalf("stop %q after %d messages, want max_rounds after 4", sum.StopReason, len(sum.Transcript))
	}
	// keep last_n 1: system, task, and only the admin's latest message.
	msgs := h.model.requests("coder")[1].Messages
	if len(msgs) != 3 || msgs[2].Content != "admin: a2" {
		t.Errorf("coder's second context: %+v, want system, task, admin: a2", msgs)
	}
	// keep all (the admin): system, task, a1, c1.
	if msgs := h.model.requests("admin")[1].Messages; len(msgs) != 4 || msgs[2].Role != openai.ChatMessageRoleAssistant {
		t.Errorf("admin's second context: %+v", msgs)
	}
}

func TestToolCallsAreLoggedBeforeTheNextModelCall(t *testing.T) {
	var h *harness
	h = newHarness(t, `
participants:
  - {name: coder, profile: coder}
termination: {max_rounds: 1}
`, map[string][]answer{
		"coder": {
			call("util__count", `{}`),
			{fn: func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
				// The result the model is about to read is already durable.
				r, _ := h.store.Run(h.lastID())
				if p := r.Pending(); len(p) != 0 {
					t.Errorf("model called with calls pending in the log: %+v", p)
				}
				if last := req.Messages[len(req.Messages)-1]; last.Role != "tool" || last.Content != `{"count":1}` {
					t.Errorf("last message %+v, want the tool result", last)
				}
				return openai.ChatCompletionMessage{Content: "counted once"}, nil
			}},
		},
	})
	r := h.start("count")
	sum := h.wait(r)
	if sum.StopReason != ReasonMaxRounds || sum.Transcript[0].Content != "counted once" {
		t.Fatalf("summary %+v", sum)
	}
	if h.util.count.Load() != 1 {
		t.Errorf("count called %d times", h.util.count.Load())
	}
}

func (h *harness) lastID() string {
	sums, _ := h.store.List()
	return sums[len(sums)-1].ID
}

func TestGraphWithToolAgentAndReplyRetry(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: coder, profile: coder}
  - name: reviewer
    profile: reviewer
    reply:
      function: review
      parameters: {type: object, properties: {approved: {type: boolean}}, required: [approved]}
  - {name: runner, tool: util.echo, arguments: {text: last_by.coder}}
selection:
  mode: graph
  edges:
    - {from: coder, to: reviewer}
    - {from: reviewer, to: runner, when: "result.approved"}
    - {from: reviewer, to: coder, otherwise: true}
    - {from: runner, to: coder}
termination: {max_rounds: 3}
`, map[string][]answer{
		"coder":    {say("print(1)")},
		"reviewer": {say("looks fine"), call("review", `{"approved": "yes"}`), call("review", `{"approved": true}`)},
	})
	sum := h.wait(h.start("task"))
	if sum.StopReason != ReasonMaxRounds || speakers(sum) != "coder,reviewer,runner" {
		t.Fatalf("stop %q, speakers %s", sum.StopReason, speakers(sum))
	}
	if got := sum.Transcript[2].Content; got != `{"text":"print(1)"}` {
		t.Errorf("runner's message %s, want the echoed coder's text", got)
	}
	reqs := h.model.requests("reviewer")
	if len(reqs) != 3 || !strings.Contains(reqs[2].Messages[len(reqs[2].Messages)-1].Content, "approved") {
		t.Errorf("reviewer asked %d times; the last feedback should name the bad field", len(reqs))
	}
	r := (*storeT)(h.store).mustRun(t, sum.ID)
	var transitions int
	for _, k := range kinds(t, r) {
		if k == runs.KindTransition {
			transitions++
		}
	}
	if transitions != 2 {
		t.Errorf("%d transitions logged, want 2", transitions)
	}
}

func TestReplyFailed(t *testing.T) {
	h := newHarness(t, `
participants:
  - name: reviewer
    profile: reviewer
    reply: {function: review, max_attempts: 2, parameters: {type: object, properties: {ok: {type: boolean}}}}
`, map[string][]answer{"reviewer": {say("no"), say("still no")}})
	sum := h.wait(h.start("task"))
	if sum.StopReason != ReasonReplyFailed || !strings.Contains(sum.StopDetail, "answered in text") {
		t.Fatalf("stop %q: %s", sum.StopReason, sum.StopDetail)
	}
}

const selectorFlow = `
participants:
  - {name: admin, profile: admin, description: leads}
  - {name: coder, profile: coder, description: codes}
  - {name: user, human: true}
selection:
  mode: selector
  selector: {profile: admin, max_attempts: 2, on_failure: %s, allow_repeat_speaker: false}
termination: {any: [{text_mention: DONE}, {max_rounds: 3}]}
`

func TestSelectorPicksThroughAnEnum(t *testing.T) {
	h := newHarness(t, strings.Replace(selectorFlow, "%s", "stop", 1), map[string][]answer{
		"admin":    {say("go")},
		"selector": {say("coder, I think"), pick("coder", "the admin asked for code")},
		"coder":    {say("DONE")},
	})
	sum := h.wait(h.start("task"))
	if sum.StopReason != ReasonTextMention || speakers(sum) != "admin,coder" {
		t.Fatalf("stop %q, speakers %s", sum.StopReason, speakers(sum))
	}
	cs := choices(t, (*storeT)(h.store).mustRun(t, sum.ID))
	if c := cs[1]; c.Mode != "selector" || c.Reason != "selector: the admin asked for code" || strings.Join(c.Candidates, ",") != "coder,user" {
		t.Errorf("choice %+v", c)
	}
	req := h.model.requests("selector")[0]
	var params struct {
		Properties struct {
			Speaker struct {
				Enum []string `json:"enum"`
			} `json:"speaker"`
		} `json:"properties"`
	}
	json.Unmarshal(req.Tools[0].Function.Parameters.(json.RawMessage), &params)
	if strings.Join(params.Properties.Speaker.Enum, ",") != "coder,user" {
		t.Errorf("enum %v, want the candidates without the last speaker", params.Properties.Speaker.Enum)
	}
	if u := sum.Usage[SelectorParticipant("admin")]; u.Calls != 2 {
		t.Errorf("selector usage %+v, want 2 calls", u)
	}
}

func TestSelectorFailureRules(t *testing.T) {
	bad := []answer{pick("nobody", "x"), say("hmm")}
	t.Run("stop", func(t *testing.T) {
		h := newHarness(t, strings.Replace(selectorFlow, "%s", "stop", 1), map[string][]answer{"admin": {say("go")}, "selector": bad})
		sum := h.wait(h.start("task"))
		if sum.StopReason != ReasonSelectorFailed || !strings.Contains(sum.StopDetail, `named "nobody"`) || !strings.Contains(sum.StopDetail, "on_failure stop") {
			t.Fatalf("stop %q: %s", sum.StopReason, sum.StopDetail)
		}
	})
	t.Run("first", func(t *testing.T) {
		h := newHarness(t, strings.Replace(selectorFlow, "%s", "first", 1), map[string][]answer{
			"admin": {say("go")}, "selector": bad, "coder": {say("DONE")}})
		sum := h.wait(h.start("task"))
		cs := choices(t, (*storeT)(h.store).mustRun(t, sum.ID))
		if sum.StopReason != ReasonTextMention || cs[1].Speaker != "coder" || !strings.Contains(cs[1].Reason, "on_failure first") {
			t.Fatalf("stop %q, choice %+v", sum.StopReason, cs[1])
		}
	})
	t.Run("human", func(t *testing.T) {
		h := newHarness(t, strings.Replace(selectorFlow, "%s", "human", 1), map[string][]answer{
			"admin": {say("go")}, "selector": append(bad, pick("admin", "the human answered")), "coder": nil})
		r := h.start("task")
		h.waitFor(r, runs.KindHumanInputWait)
		cs := choices(t, r)
		if cs[1].Speaker != "user" || !strings.Contains(cs[1].Reason, "on_failure human") {
			t.Fatalf("choice %+v", cs[1])
		}
	})
}

func TestHumanTurnHoldsNoGoroutine(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: user, human: true}
termination: {text_mention: BYE}
`, map[string][]answer{"admin": {say("what now?"), say("BYE")}})
	r := h.start("chat")
	h.waitFor(r, runs.KindHumanInputWait)
	waitIdle(t, h.eng)
	if st := r.Status(); st != runs.StatusWaiting {
		t.Fatalf("status %s", st)
	}
	if _, err := h.eng.Input(r.ID(), "finish up"); err != nil {
		t.Fatal(err)
	}
	sum := h.wait(r)
	if sum.StopReason != ReasonTextMention || speakers(sum) != "admin,user,admin" {
		t.Fatalf("stop %q, speakers %s", sum.StopReason, speakers(sum))
	}
	if _, err := h.eng.Input(r.ID(), "late"); !errors.Is(err, runs.ErrStopped) {
		t.Errorf("input to a stopped run: %v", err)
	}
}

// waitIdle waits until the engine has no driver goroutine.
func waitIdle(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Active() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d drivers still running", e.Active())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestHandoffToHuman(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: user, human: true}
termination: {handoff_to_human: true}
`, map[string][]answer{"admin": {say("over to you")}})
	sum := h.wait(h.start("chat"))
	if sum.StopReason != ReasonHandoffToHuman {
		t.Fatalf("stop %q", sum.StopReason)
	}
}

func TestTerminateTool(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
termination: {terminate_tool: true}
`, map[string][]answer{"admin": {call("terminate", `{"reason":"done"}`)}})
	sum := h.wait(h.start("chat"))
	if sum.StopReason != ReasonTerminateTool {
		t.Fatalf("stop %q: %s", sum.StopReason, sum.StopDetail)
	}
}

func TestTokenBudgetCheckedBeforeTheCall(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
termination: {token_budget: 100}
`, map[string][]answer{"admin": {call("util__echo", `{}`), {msg: openai.ChatCompletionMessage{Content: "never"}, usage: 1}}})
	h.model.queues["admin"][0].usage = 60
	sum := h.wait(h.start("chat"))
	if sum.StopReason != ReasonTokenBudget || len(h.model.requests("admin")) != 1 {
		t.Fatalf("stop %q after %d model calls; want token_budget before the second", sum.StopReason, len(h.model.requests("admin")))
	}
}

func TestTimeLimit(t *testing.T) {
	var late atomic.Bool // the clock jumps past the limit during the first model call
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
termination: {time_limit: 5m}
`, map[string][]answer{"admin": {{fn: func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
		late.Store(true)
		return openai.ChatCompletionMessage{Content: "slow"}, nil
	}}}})
	h.eng.cfg.Now = func() time.Time {
		if late.Load() {
			return time.Now().Add(time.Hour)
		}
		return time.Now()
	}
	sum := h.wait(h.start("chat"))
	if sum.StopReason != ReasonTimeLimit || len(sum.Transcript) != 1 {
		t.Fatalf("stop %q after %d messages", sum.StopReason, len(sum.Transcript))
	}
}

func TestStallGuardStopsARun(t *testing.T) {
	h := newHarness(t, `
participants:
  - {name: admin, profile: admin}
  - {name: coder, profile: coder}
stall: {window: 4}
`, map[string][]answer{"admin": {say("again?"), say("again?")}, "coder": {say("ok")}})
	sum := h.wait(h.start("chat"))
	if sum.StopReason != runs.StopStall || !strings.Contains(sum.StopDetail, StallRepeatedMessage) {
		t.Fatalf("stop %q: %s", sum.StopReason, sum.StopDetail)
	}
}

func TestStopCancelsInFlightCalls(t *testing.T) {
	t.Run("model", func(t *testing.T) {
		canceled := make(chan error, 1)
		started := make(chan struct{})
		h := newHarness(t, "participants: [{name: admin, profile: admin}]\n", map[string][]answer{"admin": {{fn: func(ctx context.Context, _ openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
			close(started)
			<-ctx.Done()
			canceled <- ctx.Err()
			return openai.ChatCompletionMessage{}, ctx.Err()
		}}}})
		r := h.start("chat")
		<-started
		if err := h.eng.Stop(r.ID(), ""); err != nil {
			t.Fatal(err)
		}
		if err := <-canceled; !errors.Is(err, context.Canceled) {
			t.Errorf("model call ended with %v", err)
		}
		if sum := h.wait(r); sum.StopReason != runs.StopExternal {
			t.Errorf("stop %q", sum.StopReason)
		}
		waitIdle(t, h.eng)
		if err := h.eng.Stop(r.ID(), ""); !errors.Is(err, runs.ErrStopped) {
			t.Errorf("second stop: %v", err)
		}
	})
	t.Run("tool", func(t *testing.T) {
		h := newHarness(t, "participants: [{name: runner, tool: util.block, arguments: {text: '\"x\"'}}]\n", nil)
		r := h.start("chat")
		<-h.util.blocked
		if err := h.eng.Stop(r.ID(), "enough"); err != nil {
			t.Fatal(err)
		}
		if err := <-h.util.ended; !errors.Is(err, context.Canceled) {
			t.Errorf("tool call ended with %v", err)
		}
		waitIdle(t, h.eng)
		if sum := h.wait(r); sum.StopReason != runs.StopExternal || sum.StopDetail != "enough" {
			t.Errorf("stop %q %q", sum.StopReason, sum.StopDetail)
		}
	})
}

func TestResumeNeverRepeatsALoggedCall(t *testing.T) {
	doc := `
participants:
  - {name: coder, profile: coder}
termination: {max_rounds: 1}
`
	block := make(chan struct{})
	h := newHarness(t, doc, map[string][]answer{"coder": {
		call("util__count", `{}`),
		{fn: func(ctx context.Context, _ openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
			close(block)
			<-ctx.Done() // the engine closes under it: a crash, as far as the log knows
			return openai.ChatCompletionMessage{}, ctx.Err()
		}},
		say("counted"),
	}})
	r := h.start("count")
	<-block
	id := r.ID()
	h.close()
	if h.util.count.Load() != 1 {
		t.Fatalf("count %d before the restart", h.util.count.Load())
	}
	h.open(doc)
	r, err := h.store.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eng.Resume(); err != nil {
		t.Fatal(err)
	}
	sum := h.wait(r)
	if sum.StopReason != ReasonMaxRounds || h.util.count.Load() != 1 {
		t.Fatalf("stop %q, count called %d times; want once", sum.StopReason, h.util.count.Load())
	}
	// The resumed model call saw the logged call and its result.
	reqs := h.model.requests("coder")
	last := reqs[len(reqs)-1].Messages
	if m := last[len(last)-1]; m.Role != "tool" || m.Content != `{"count":1}` {
		t.Errorf("resumed context ends with %+v", m)
	}
}

func TestPendingCallOfANonIdempotentToolIsNotRepeated(t *testing.T) {
	doc := "participants: [{name: runner, tool: util.block, arguments: {text: '\"x\"'}}]\ntermination: {max_rounds: 1}\n"
	h := newHarness(t, doc, nil)
	r := h.start("go")
	<-h.util.blocked
	id := r.ID()
	h.close() // the call is logged, its result never will be
	<-h.util.ended
	h.open(doc)
	if err := h.eng.Resume(); err != nil {
		t.Fatal(err)
	}
	r, _ = h.store.Run(id)
	sum := h.wait(r)
	if sum.StopReason != ReasonMaxRounds || !strings.Contains(sum.Transcript[0].Content, `"interrupted"`) {
		t.Fatalf("stop %q, message %s", sum.StopReason, sum.Transcript[0].Content)
	}
}

func TestStartErrors(t *testing.T) {
	h := newHarness(t, "participants: [{name: admin, profile: admin}]\n", nil)
	if _, err := h.eng.Start("nope", "x"); !errors.Is(err, ErrUnknownFlow) || !strings.Contains(err.Error(), "test") {
		t.Errorf("unknown flow: %v", err)
	}
	if _, err := h.eng.Start("test", "  "); err == nil {
		t.Error("an empty task was accepted")
	}
	if _, err := h.eng.Input("20261206T000215.516Z-156050", "x"); !errors.Is(err, runs.ErrUnknownRun) {
		t.Errorf("input to an unknown run: %v", err)
	}
}

func TestMetricsCountStopsRoundsAndTokens(t *testing.T) {
	h := newHarness(t, "participants: [{name: admin, profile: admin}]\ntermination: {max_rounds: 2}\n",
		map[string][]answer{"admin": {say("one"), say("two")}})
	m := NewMetrics()
	h.eng.cfg.Observer = m
	h.wait(h.start("go"))
	// The stop is counted just after it is logged, which is what wait saw;
	// the driver is gone once it has been counted.
	waitIdle(t, h.eng)
	if got := testutil.ToFloat64(m.stops.WithLabelValues("test", ReasonMaxRounds)); got != 1 {
		t.Errorf("stops %v", got)
	}
	if got := testutil.ToFloat64(m.rounds.WithLabelValues("test")); got != 2 {
		t.Errorf("rounds %v", got)
	}
	if got := testutil.ToFloat64(m.tokens.WithLabelValues("test", "admin", "completion")); got != 20 {
		t.Errorf("completion tokens %v", got)
	}
}
