package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry"
)

// RetryPolicy says how a model call is retried. Zero fields take the
// defaults.
type RetryPolicy struct {
	// MaxAttempts is how many attempts one model call gets; that many
	// consecutive failures end the run. Default 3.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubled for each
	// further one (with ±20% jitter). Default 500 ms.
	Backoff time.Duration
	// MaxBackoff caps a wait, including one asked for by Retry-After.
	// Default 10 s.
	MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt, streamed or not; an attempt that
	// outlives it counts as a transient failure. Default 2 min.
	AttemptTimeout time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.Backoff <= 0 {
		p.Backoff = 500 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 10 * time.Second
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = 2 * time.Minute
	}
	return p
}

// wait returns the backoff before attempt n+1 (n >= 1), or retryAfter when
// the endpoint named one.
func (p RetryPolicy) wait(n int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, p.MaxBackoff)
	}
	d := p.Backoff << (n - 1)
	if d <= 0 || d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// model calls one OpenAI-compatible endpoint.
type model struct {
	client *openai.Client
	retry  RetryPolicy
	key    string // only to redact it from messages an endpoint echoes
}

func newModel(baseURL, key string, hc *http.Client, retry RetryPolicy) *model {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = strings.TrimRight(baseURL, "/")
	if hc == nil {
		hc = &http.Client{} // no client timeout: streams run long; attempts have their own
	}
	cfg.HTTPClient = retryAfterDoer{hc}
	return &model{client: openai.NewClientWithConfig(cfg), retry: retry.withDefaults(), key: key}
}

// turn is the model's answer to one request, streamed or not.
type turn struct {
	msg      openai.ChatCompletionMessage
	finish   string
	usage    openai.Usage
	attempts int
}

type callOpts struct {
	stream  bool
	onDelta func(string)                                             // text as it streams
	onRetry func(attempt int, wait time.Duration, e *registry.Error) // before each wait
}

// modelError is a failed model call: the error the caller sees, and whether
// the endpoint refused the request because it carried tools.
type modelError struct {
	err           *registry.Error
	toolsRejected bool
}

func (e *modelError) Error() string { return e.err.Error() }

// complete sends req, retrying transient failures. A stream that has
// already forwarded text is not retried: the caller has seen it.
func (m *model) complete(ctx context.Context, req openai.ChatCompletionRequest, o callOpts) (turn, *modelError) {
	for attempt := 1; ; attempt++ {
		retryAfter := time.Duration(-1)
		actx, cancel := context.WithTimeout(context.WithValue(ctx, retryAfterKey{}, &retryAfter), m.retry.AttemptTimeout)
		t, forwarded, err := m.once(actx, req, o)
		timedOut := actx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			t.attempts = attempt
			return t, nil
		}
		f := m.classify(ctx, err, timedOut)
		if f.canceled != nil {
			return turn{}, &modelError{err: f.canceled}
		}
		if !f.transient || forwarded || attempt >= m.retry.MaxAttempts {
			return turn{}, m.giveUp(f, attempt, len(req.Tools) > 0)
		}
		wait := m.retry.wait(attempt, retryAfter)
		if o.onRetry != nil {
			o.onRetry(attempt, wait, m.giveUp(f, attempt, false).err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return turn{}, &modelError{err: ctxErr(ctx, "waiting to retry the model")}
		}
	}
}

// once makes one attempt. forwarded reports whether text was streamed to
// onDelta before a failure.
func (m *model) once(ctx context.Context, req openai.ChatCompletionRequest, o callOpts) (t turn, forwarded bool, err error) {
	if !o.stream {
		resp, err := m.client.CreateChatCompletion(ctx, req)
		if err != nil {
			return t, false, err
		}
		if len(resp.Choices) == 0 {
			return t, false, errNoChoices
		}
		c := resp.Choices[0]
		t.msg, t.finish, t.usage = c.Message, string(c.FinishReason), resp.Usage
		return t, false, nil
	}
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := m.client.CreateChatCompletionStream(context.WithValue(ctx, streamedKey{}, true), req)
	if err != nil {
		return t, false, err
	}
	defer st.Close()
	var content strings.Builder
	var calls toolCallAssembler
	for {
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return t, forwarded, err
		}
		if chunk.Usage != nil {
			t.usage = *chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // n is never set, so only choice 0 exists
			}
			if d := ch.Delta.Content; d != "" {
				content.WriteString(d)
				forwarded = true
				if o.onDelta != nil {
					o.onDelta(d)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				calls.add(tc)
			}
			if ch.FinishReason != "" {
				t.finish = string(ch.FinishReason)
			}
		}
	}
	t.msg = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content.String(), ToolCalls: calls.calls}
	return t, forwarded, nil
}

var errNoChoices = errors.New("the model answered with no choices")

// failure is a classified model error.
type failure struct {
	status        int    // HTTP status, 0 when there was none
	message       string // what the endpoint said, redacted
	transient     bool
	toolsRejected bool
	canceled      *registry.Error // the caller went away: no retry, no model blame
}

func (m *model) classify(ctx context.Context, err error, timedOut bool) failure {
	if ctx.Err() != nil {
		return failure{canceled: ctxErr(ctx, "calling the model")}
	}
	var f failure
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case errors.As(err, &apiErr):
		f.status, f.message = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		f.status = reqErr.HTTPStatusCode
		// Redacted before it is cut: a key that straddles the cut would
		// no longer match whole.
		f.message = m.redact(strings.TrimSpace(string(reqErr.Body)))
		if len(f.message) > 500 {
			n := 500
			for n > 0 && !utf8.RuneStart(f.message[n]) { // never inside a character
				n--
			}
			f.message = f.message[:n] + "…"
		}
		if f.message == "" && reqErr.Err != nil {
			f.message = reqErr.Err.Error()
		}
	case timedOut:
		f.message = fmt.Sprintf("no complete answer within %s", m.retry.AttemptTimeout)
		f.transient = true
	case errors.As(err, &netErr), errors.As(err, &urlErr), errors.Is(err, io.ErrUnexpectedEOF):
		f.message = err.Error()
		f.transient = true
	default:
		f.message = err.Error()
	}
	if f.message == "" {
		f.message = http.StatusText(f.status)
	}
	f.message = m.redact(f.message)
	switch s := f.status; {
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusConflict,
		s == http.StatusTooEarly, s >= 500:
		f.transient = true
	case s == http.StatusBadRequest, s == http.StatusNotFound, s == http.StatusUnprocessableEntity:
		f.toolsRejected = mentionsTools(f.message)
	}
	return f
}

// mentionsTools recognizes the ways endpoints say a model cannot use tools:
// Ollama's "does not support tools", vLLM's `"auto" tool choice requires
// --enable-auto-tool-choice`, "function calling is not supported", ... Only
// a refusal of tools as such counts: a bad request that merely involves them
// (a tool message out of order) must not switch tools off for the session.
func mentionsTools(msg string) bool {
	m := strings.ToLower(msg)
	if !strings.Contains(m, "tool") && !strings.Contains(m, "function call") {
		return false
	}
	for _, refusal := range []string{"not support", "unsupported", "not enabled", "not available", "not allowed", "enable-auto-tool-choice"} {
		if strings.Contains(m, refusal) {
			return true
		}
	}
	return false
}

// giveUp turns the last failure into the error the caller sees.
func (m *model) giveUp(f failure, attempts int, hadTools bool) *modelError {
	var e *registry.Error
	status := ""
	if f.status != 0 {
		status = fmt.Sprintf(" (%d %s)", f.status, http.StatusText(f.status))
	}
	switch {
	case f.transient && attempts > 1:
		e = agentError(CodeModelUnavailable, true, "the model endpoint failed %d times in a row; last%s: %s", attempts, status, f.message)
	case f.transient:
		e = agentError(CodeModelUnavailable, true, "the model endpoint failed%s: %s", status, f.message)
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		e = agentError(CodeModelError, false, "the model endpoint refused the API key%s: %s; check OPENAI_API_KEY or --llm-key-file", status, f.message)
	default:
		e = agentError(CodeModelError, false, "the model endpoint refused the request%s: %s", status, f.message)
	}
	e.With("attempts", attempts)
	if f.status != 0 {
		e.With("status", f.status)
	}
	return &modelError{err: e, toolsRejected: hadTools && f.toolsRejected}
}

func (m *model) redact(s string) string {
	if len(m.key) >= 8 {
		s = strings.ReplaceAll(s, m.key, "[redacted]")
	}
	return s
}

func ctxErr(ctx context.Context, doing string) *registry.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return registry.Errorf(registry.CodeTimeout, "the run's deadline passed while %s", doing)
	}
	return registry.Errorf(registry.CodeCanceled, "the caller canceled the run while %s", doing)
}

// retryAfterKey carries a *time.Duration into which retryAfterDoer writes
// the Retry-After of a 429 or 503 (go-openai's errors do not keep headers).
type retryAfterKey struct{}

type retryAfterDoer struct{ c *http.Client }

func (d retryAfterDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if err == nil && req.Context().Value(streamedKey{}) != nil {
		resp = asEventStream(resp)
	}
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if p, ok := req.Context().Value(retryAfterKey{}).(*time.Duration); ok {
			*p = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	}
	return resp, err
}

// parseRetryAfter reads seconds or an HTTP date; -1 when absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// toolCallAssembler rebuilds tool calls from stream deltas. OpenAI sends a
// call's id and name in its first delta and the arguments in pieces, all
// tagged with the call's index; several calls may interleave. Some servers
// (Ollama among them) send whole calls without an index; a delta with a new
// id then starts a new call.
type toolCallAssembler struct {
	calls   []openai.ToolCall
	byIndex map[int]int // delta index → position in calls
}

func (a *toolCallAssembler) add(d openai.ToolCall) {
	pos := -1
	switch {
	case d.Index != nil:
		if a.byIndex == nil {
			a.byIndex = map[int]int{}
		}
		p, ok := a.byIndex[*d.Index]
		if ok {
			pos = p
		} else {
			a.byIndex[*d.Index] = len(a.calls)
		}
	case len(a.calls) > 0 && (d.ID == "" || d.ID == a.calls[len(a.calls)-1].ID):
		pos = len(a.calls) - 1
	}
	if pos < 0 {
		a.calls = append(a.calls, openai.ToolCall{ID: d.ID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: d.Function.Name, Arguments: d.Function.Arguments}})
		return
	}
	c := &a.calls[pos]
	if c.ID == "" {
		c.ID = d.ID
	}
	// A name arrives whole in one delta; some servers repeat it in every
	// delta, a few split it. Append only what is not a repetition.
	if n := d.Function.Name; n != "" && n != c.Function.Name {
		c.Function.Name += n
	}
	c.Function.Arguments += d.Function.Arguments
}
