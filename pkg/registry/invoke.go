package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	fastjson "github.com/segmentio/encoding/json"
)

// Result is the answer of one successful call.
type Result struct {
	Result   json.RawMessage `json:"result"`
	Skill    string          `json:"skill"`
	Version  string          `json:"version"`
	Tool     string          `json:"tool"`
	Duration time.Duration   `json:"-"`
}

// maxLeaseRetries bounds how often one call follows a swap. Each retry
// happens only after a new snapshot was published, so this is a guard
// against a skill flapping faster than calls can land, not a timing knob.
const maxLeaseRetries = 8

// Invoke calls the tool name ("skill.tool" or "skill__tool") with args, a
// JSON object. It validates args against the tool's input schema, applies
// the skill's limits, takes a lease on the serving instance and checks the
// result. During a hot swap a call whose lease is refused by the draining
// instance is retried on the new snapshot, so swaps lose no calls. Every
// error is an *Error.
func (r *Registry) Invoke(ctx context.Context, name string, args []byte) (*Result, error) {
	return r.InvokePermitted(ctx, name, args, nil)
}

// Permit decides whether a caller may call t. It runs on the very snapshot
// the call then runs on (again after every swap the call follows), so a
// filtered caller (an MCP endpoint with a filter, a read-only agent) cannot be
// served by a new version that its filter refuses. Its error is returned as the
// call's; it must be quick and must not block.
type Permit func(t *Tool) error

// InvokePermitted is Invoke for a caller that may call only the tools permit
// allows. A nil permit allows every tool.
//
// A call made with the context of another call in flight (a skill's nested
// call, which the loader makes with the context its Backend was given) runs
// under that call's scope: the permits of every call on its chain apply
// too, the chain may be at most Config.MaxCallDepth tools long, and a tool
// already on the chain is refused (forbidden, with the reason "cycle",
// "depth" or "scope" in the details).
func (r *Registry) InvokePermitted(ctx context.Context, name string, args []byte, permit Permit) (*Result, error) {
	return r.invokeFrame(ctx, name, args, permit, nil)
}

// InvokeAllowed is Invoke for a call that a tool makes (the loader's Host
// service, for a skill's nested call): allow says what the calling skill
// itself may call (its manifest's uses) and binds this call alone, unlike a
// Permit, which also binds every call made beneath it. It is checked on the
// snapshot the call runs on, after the lookup, and its error is returned
// as the call's, so a refusal is counted (OnCall, OnNested) like any other.
func (r *Registry) InvokeAllowed(ctx context.Context, name string, args []byte, allow Permit) (*Result, error) {
	return r.invokeFrame(ctx, name, args, nil, allow)
}

func (r *Registry) invokeFrame(ctx context.Context, name string, args []byte, permit, allow Permit) (*Result, error) {
	start := time.Now()
	parent := frameFrom(ctx)
	f := &frame{Context: ctx, parent: parent, permit: permit, allow: allow, depth: 1, id: r.ids.next.Add(1), ids: r.ids}
	if parent != nil {
		f.depth = parent.depth + 1
	}
	res, err := r.invoke(f, name, args, start)
	if parent != nil && r.cfg.OnNested != nil {
		r.cfg.OnNested(NestedCall{
			ID: f.callID(), ParentID: parent.callID(), Caller: parent.tool, Tool: name,
			Depth: f.depth, Code: CodeOf(err), Duration: time.Since(start),
		})
	}
	if r.cfg.OnCall != nil {
		// One label per tool: a failed call named skill__tool is counted
		// under skill.tool, as its successful calls are.
		tool := name
		if res != nil {
			tool = res.Tool
		} else if skill, t, err := SplitName(name); err == nil {
			tool = Qualified(skill, t)
		}
		r.cfg.OnCall(tool, CodeOf(err), time.Since(start))
	}
	return res, err
}

// invoke runs the call whose frame f is, f's context being the caller's.
// The Backend is given f (under the skill's timeout), so that it carries
// the call's scope.
func (r *Registry) invoke(f *frame, name string, args []byte, start time.Time) (*Result, error) {
	ctx, permit := f.Context, f.permit
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	var validated *jsonschema.Schema // the schema args last passed; a swap may bring another
	for attempt := 0; ; attempt++ {
		changed := r.Changed() // before the snapshot, so a publication in between closes it
		snap := r.cur.Load()
		t, err := snap.Lookup(name)
		if err != nil {
			return nil, err
		}
		if permit != nil {
			if err := permit(t); err != nil {
				return nil, AsError(err)
			}
		}
		if f.allow != nil {
			if err := f.allow(t); err != nil {
				return nil, AsError(err)
			}
		}
		if err := r.checkScope(f.parent, t); err != nil {
			return nil, err
		}
		f.tool = t.Name // before f is shared with the backend; the same name on every attempt
		sk := t.skill
		if !sk.available.Load() {
			return nil, Errorf(CodeSkillUnavailable, "skill %s@%s is restarting after a crash; retry shortly", sk.name, sk.version).
				With("tool", t.Name).With("version", sk.version)
		}
		if int64(len(args)) > sk.limits.MaxRequestBytes {
			return nil, Errorf(CodeRequestTooLarge, "arguments of %s are %d bytes, over the skill's limit of %d", t.Name, len(args), sk.limits.MaxRequestBytes).
				With("limit", sk.limits.MaxRequestBytes)
		}
		if validated != t.schema {
			if err := validateArgs(t, args); err != nil {
				return nil, err
			}
			validated = t.schema
		}
		if !sk.inflight.tryAdd(sk.limits.MaxConcurrency) {
			return nil, Errorf(CodeOverloaded, "skill %s is at its limit of %d concurrent calls", sk.name, sk.limits.MaxConcurrency).
				With("limit", sk.limits.MaxConcurrency)
		}
		if !sk.backend.Acquire() {
			sk.inflight.n.Add(-1)
			// The instance is draining: the loader has published (or is about
			// to publish) its successor. Wait for that snapshot and retry.
			if attempt >= maxLeaseRetries {
				return nil, Errorf(CodeSkillUnavailable, "skill %s@%s is being replaced; retry", sk.name, sk.version).With("tool", t.Name)
			}
			if r.cur.Load() == snap {
				select {
				case <-changed:
				case <-ctx.Done():
					return nil, ctxError(ctx, t.Name)
				case <-time.After(time.Second):
				}
			}
			continue
		}
		res, err := r.call(f, t, args)
		sk.backend.Release()
		sk.inflight.n.Add(-1)
		if err != nil {
			return nil, err
		}
		return &Result{Result: res, Skill: sk.name, Version: sk.version, Tool: t.Name, Duration: time.Since(start)}, nil
	}
}

func (r *Registry) call(ctx context.Context, t *Tool, args []byte) ([]byte, error) {
	sk := t.skill
	cctx := ctx
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > sk.limits.Timeout {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, sk.limits.Timeout)
		defer cancel()
	}
	res, err := sk.backend.Invoke(cctx, t.local, args, sk.limits.MaxResponseBytes)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, t.Name)
		}
		timedOut := cctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
		if timedOut && CodeOf(err) != CodeSkillUnavailable {
			if cctx == ctx { // the caller's own, earlier deadline
				return nil, Errorf(CodeTimeout, "%s: the caller's deadline passed", t.Name)
			}
			return nil, Errorf(CodeTimeout, "%s did not answer within the skill's timeout of %s", t.Name, sk.limits.Timeout).
				With("timeout_ms", sk.limits.Timeout.Milliseconds())
		}
		var e *Error
		if errors.As(err, &e) {
			if e.Code == CodeSkillCrashed && t.Annotations.Idempotent {
				// Safe to repeat: the skill restarts and the call can be retried.
				e.Retryable = true
			}
			return nil, e
		}
		return nil, Errorf(CodeInternal, "%s: %v", t.Name, err)
	}
	if int64(len(res)) > sk.limits.MaxResponseBytes {
		return nil, Errorf(CodeResponseTooLarge, "%s returned %d bytes, over the skill's limit of %d", t.Name, len(res), sk.limits.MaxResponseBytes).
			With("limit", sk.limits.MaxResponseBytes)
	}
	if t.outSchema != nil {
		// A declared output schema is a promise that MCP clients check
		// (structuredContent must conform): a result that breaks it is the
		// skill's fault, said here rather than as a client's puzzle.
		if err := validateResult(t, res); err != nil {
			return nil, err
		}
		return res, nil
	}
	// The result is passed on as raw bytes into every answer, so it must be
	// valid JSON. encoding/json's validator made this check half the cost
	// of a call with a 64 KiB result; validJSON is segmentio's vectorized
	// one for a large result and a single pass for a small one.
	if !validJSON(res) {
		return nil, Errorf(CodeInvalidResponse, "%s returned a result that is not valid JSON", t.Name)
	}
	return res, nil
}

func ctxError(ctx context.Context, tool string) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Errorf(CodeTimeout, "%s: the caller's deadline passed", tool)
	}
	return Errorf(CodeCanceled, "%s: the caller canceled the call", tool)
}

// ArgumentProblem is one reason a value fails a schema (the arguments of a
// call, or a result), located by JSON pointer into that value.
type ArgumentProblem struct {
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

// ValidateArguments checks args against the input schema of tool without
// calling it (the agent loop uses it to answer a model's bad call).
func (s *Snapshot) ValidateArguments(name string, args []byte) error {
	t, err := s.Lookup(name)
	if err != nil {
		return err
	}
	return validateArgs(t, args)
}

func validateArgs(t *Tool, args []byte) (err error) {
	// jsonschema v5 panics on some inputs (an "integer" check of 1e1000010
	// dereferences a nil big.Rat); arguments are untrusted, so a panic is
	// their problem, never the host's.
	defer func() {
		if p := recover(); p != nil {
			err = Errorf(CodeInvalidArguments, "arguments of %s could not be checked against its input schema (%v); a number out of range?", t.Name, p)
		}
	}()
	if t.fast != nil && len(args) > 0 && args[0] == '{' && t.fast.validBytes(args) {
		return nil
	}
	v, err := decodeJSON(args)
	if err != nil {
		return Errorf(CodeInvalidArguments, "arguments of %s are not valid JSON: %v", t.Name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return Errorf(CodeInvalidArguments, "arguments of %s must be a JSON object", t.Name)
	}
	problems, err := schemaProblems(t.schema, t.fast, v)
	if err != nil {
		return Errorf(CodeInvalidArguments, "arguments of %s: %v", t.Name, err)
	}
	if problems == nil {
		return nil
	}
	return Errorf(CodeInvalidArguments, "arguments of %s do not match its input schema: %s", t.Name, describeProblems(problems, "(the arguments object)")).
		With("problems", problems)
}

// validateResult checks a result against the tool's output schema. The
// result comes from the skill, so a panic in the validator is the skill's
// fault too.
func validateResult(t *Tool, res []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Errorf(CodeInvalidResponse, "the result of %s could not be checked against its output schema (%v)", t.Name, p)
		}
	}()
	if t.outFast != nil && t.outFast.validBytes(res) {
		return nil
	}
	v, err := decodeJSON(res)
	if err != nil {
		return Errorf(CodeInvalidResponse, "%s returned a result that is not valid JSON: %v", t.Name, err)
	}
	problems, err := schemaProblems(t.outSchema, t.outFast, v)
	if err != nil {
		return Errorf(CodeInvalidResponse, "the result of %s: %v", t.Name, err)
	}
	if problems == nil {
		return nil
	}
	return Errorf(CodeInvalidResponse, "%s returned a result that does not match its output schema: %s", t.Name, describeProblems(problems, "(the result)")).
		With("problems", problems)
}

// schemaProblems checks a decoded value against a compiled schema, asking
// the fast validator first. It returns no problems when v is valid, and an
// error only when the validator fails in a way that is not a verdict.
func schemaProblems(s *jsonschema.Schema, fast *fastSchema, v any) ([]ArgumentProblem, error) {
	if fast != nil && fast.valid(v) {
		return nil, nil
	}
	err := s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	return leafProblems(ve), nil
}

// describeProblems words problems for a message; root names the value
// whose pointer is empty.
func describeProblems(problems []ArgumentProblem, root string) string {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		ptr := p.Pointer
		if ptr == "" {
			ptr = root
		}
		msgs[i] = ptr + ": " + p.Reason
	}
	return strings.Join(msgs, "; ")
}

// leafProblems flattens a validation error to its leaves, where the reasons
// a person can act on are.
func leafProblems(ve *jsonschema.ValidationError) []ArgumentProblem {
	var out []ArgumentProblem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, ArgumentProblem{Pointer: e.InstanceLocation, Reason: e.Message})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(out) > 20 {
		out = append(out[:20], ArgumentProblem{Reason: fmt.Sprintf("and %d more problems", len(out)-20)})
	}
	return out
}

// maxArgDepth refuses deeply nested arguments before they reach the schema
// validator, whose recursion follows the document.
const maxArgDepth = 64

// decodeJSON decodes arguments for the schema validator, numbers as
// json.Number so that large integers keep their precision.
func decodeJSON(b []byte) (any, error) {
	if err := checkDepth(b, maxArgDepth); err != nil {
		return nil, err
	}
	var v any
	rest, err := fastjson.Parse(b, &v, fastjson.UseNumber)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// checkDepth rejects JSON nested deeper than max, scanning bytes only.
func checkDepth(b []byte, max int) error {
	depth, inStr, esc := 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return fmt.Errorf("nested deeper than %d levels", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}
