package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/skillhost/skillhost/sdk"
)

// Limits bound one run. The zero value of a field means its default.
type Limits struct {
	DefaultTimeout time.Duration // when the call gives no timeout_ms (default 5 s)
	MaxTimeout     time.Duration // the largest timeout_ms a call may ask for (default 20 s)
	MaxOutputBytes int           // stdout plus the JSON result (default 64 KiB)
	MaxStringLen   int           // length of a string a built-in may build in one step (default 1 Mi code units)
	MaxCallDepth   int           // JavaScript call depth (default 10 000)
	MaxHeapBytes   uint64        // the process's Go heap, watched while a script runs (default 256 MiB)
	HardHeapBytes  uint64        // past this the process gives up on the script: see watch (default 2 × MaxHeapBytes)
	InterruptGrace time.Duration // how long an interrupted script may take to stop: see watch (default 2 s)
	WatchEvery     time.Duration // how often the heap watchdog looks (default 5 ms)
}

// DefaultLimits are the limits of the served skill; README.md documents them.
var DefaultLimits = Limits{
	DefaultTimeout: 5 * time.Second,
	MaxTimeout:     20 * time.Second,
	MaxOutputBytes: 64 << 10,
	MaxStringLen:   1 << 20,
	MaxCallDepth:   10_000,
	MaxHeapBytes:   256 << 20,
	InterruptGrace: 2 * time.Second,
	WatchEvery:     5 * time.Millisecond,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	override(&d.DefaultTimeout, l.DefaultTimeout)
	override(&d.MaxTimeout, l.MaxTimeout)
	override(&d.MaxOutputBytes, l.MaxOutputBytes)
	override(&d.MaxStringLen, l.MaxStringLen)
	override(&d.MaxCallDepth, l.MaxCallDepth)
	override(&d.MaxHeapBytes, l.MaxHeapBytes)
	override(&d.InterruptGrace, l.InterruptGrace)
	override(&d.WatchEvery, l.WatchEvery)
	d.HardHeapBytes = 2 * d.MaxHeapBytes
	if l.HardHeapBytes > d.MaxHeapBytes {
		d.HardHeapBytes = l.HardHeapBytes
	}
	return d
}

// override sets *dst to v when v is set (positive).
func override[T int | uint64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// Error codes of a run that failed in JavaScript. They come back inside a
// successful tool result (ok=false), not as a tool error, because a failed
// script is an answer the next participant of a flow acts on: the coder
// fixes its code.
const (
	CodeSyntax        = "syntax_error"
	CodeException     = "exception" // an uncaught throw, including ReferenceError and TypeError
	CodeTimeout       = "timeout"
	CodeOutputLimit   = "output_limit"
	CodeMemoryLimit   = "memory_limit"
	CodeStackOverflow = "stack_overflow"
)

type runIn struct {
	Code      string `json:"code" jsonschema:"minLength=1,maxLength=262144" jsonschema_description:"JavaScript to run: bare code, or text holding fenced code blocks (three backticks followed by js or javascript); the JavaScript blocks are run in order and the prose around them is ignored. Print with console.log; the value of the last expression statement is returned as result."`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"minimum=1,maximum=20000" jsonschema_description:"Wall-clock limit in milliseconds (default 5000, at most 20000)."`
}

// RunError says why a script failed.
type RunError struct {
	Code    string `json:"code" jsonschema:"enum=syntax_error,enum=exception,enum=timeout,enum=output_limit,enum=memory_limit,enum=stack_overflow" jsonschema_description:"What went wrong."`
	Message string `json:"message" jsonschema_description:"The interpreter's message, with the line and column when known."`
}

type runOut struct {
	OK              bool      `json:"ok" jsonschema_description:"True when the script ran to its end without an error."`
	Stdout          string    `json:"stdout" jsonschema_description:"What the script printed with console.log (and info, warn, error, debug), one line per call; cut at the output limit."`
	StdoutTruncated bool      `json:"stdout_truncated,omitempty" jsonschema_description:"True when stdout was cut at the output limit."`
	Result          any       `json:"result,omitempty" jsonschema_description:"The value of the last expression statement, as JSON (a function or symbol as its string form); absent when undefined."`
	Error           *RunError `json:"error,omitempty" jsonschema_description:"Why the script failed; absent when ok."`
	DurationMS      float64   `json:"duration_ms" jsonschema_description:"Wall-clock time the script ran."`
}

// Runner runs scripts one at a time. One at a time because the heap
// watchdog reads the whole process's heap, so it can only attribute growth
// to a script when no other script runs beside it.
type Runner struct {
	limits Limits
	turn   chan struct{} // capacity 1: holding the token is holding the interpreter slot
	// abort is the watchdog's last resort (see watch). The default ends the
	// process; a test may record the reason instead.
	abort func(reason string)
}

// NewRunner returns a Runner with l's limits (zero fields take defaults).
func NewRunner(l Limits) *Runner {
	return &Runner{limits: l.withDefaults(), turn: make(chan struct{}, 1), abort: exitProcess}
}

// exitProcess ends the skill process; the host logs stderr, answers the
// call with skill_crashed and restarts the skill.
func exitProcess(reason string) {
	fmt.Fprintf(os.Stderr, "coderunner: exiting: %s\n", reason)
	os.Exit(3)
}

// runError is what the watchdog and the console hand to vm.Interrupt, and
// what a failed run reports.
type runError struct {
	code, msg string
}

func (e *runError) Error() string { return e.msg }

// Run runs one call. Invalid input and a cancelled ctx are tool errors;
// everything the script itself does wrong is in the result.
func (r *Runner) Run(ctx context.Context, in runIn) (runOut, error) {
	timeout := r.limits.DefaultTimeout
	if in.TimeoutMS != 0 {
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
		if in.TimeoutMS < 0 || timeout > r.limits.MaxTimeout {
			return runOut{}, sdk.Errorf("invalid_arguments", "timeout_ms %d is outside 1..%d", in.TimeoutMS, r.limits.MaxTimeout.Milliseconds())
		}
	}
	code, err := extractCode(in.Code)
	if err != nil {
		return runOut{}, err
	}
	if strings.TrimSpace(code) == "" {
		return runOut{}, sdk.Errorf("invalid_arguments", "code is empty")
	}
	prog, err := goja.Compile("code.js", code, false)
	if err != nil {
		return runOut{OK: false, Error: &RunError{Code: CodeSyntax, Message: err.Error()}}, nil
	}

	select {
	case r.turn <- struct{}{}:
		defer func() { <-r.turn }()
	case <-ctx.Done():
		return runOut{}, ctx.Err()
	}
	return r.run(ctx, prog, timeout)
}

func (r *Runner) run(ctx context.Context, prog *goja.Program, timeout time.Duration) (runOut, error) {
	// The script before may have left its garbage behind (all of it, when
	// it was stopped at the heap limit); the watchdog must not charge it to
	// this one.
	if heapBytes() > r.limits.MaxHeapBytes/2 {
		runtime.GC()
	}
	vm := goja.New()
	vm.SetMaxCallStackSize(r.limits.MaxCallDepth)
	out, err := newOutput(vm, r.limits.MaxOutputBytes)
	if err != nil {
		return runOut{}, fmt.Errorf("set up the interpreter: %w", err)
	}
	if err := r.install(vm, out); err != nil {
		return runOut{}, fmt.Errorf("set up the interpreter: %w", err)
	}

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.watch(ctx, vm, timeout, stop) })

	res, err := vm.RunProgram(prog)
	var result any
	if err == nil {
		result, err = r.export(res, out)
	}
	close(stop)
	wg.Wait()

	o := runOut{OK: err == nil, Stdout: out.buf.String(), StdoutTruncated: out.truncated, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if err == nil {
		o.Result = result
		return o, nil
	}
	var intr *goja.InterruptedError
	var exc *goja.Exception
	var so *goja.StackOverflowError
	var mine *runError
	switch {
	case errors.As(err, &intr) && ctx.Err() != nil && !errors.As(err, &mine):
		return runOut{}, ctx.Err() // the host gave up on the call
	case errors.As(err, &mine):
		o.Error = &RunError{Code: mine.code, Message: mine.msg}
	case errors.As(err, &so):
		o.Error = &RunError{Code: CodeStackOverflow, Message: fmt.Sprintf("call depth exceeded %d: %v", r.limits.MaxCallDepth, err)}
	case errors.As(err, &exc):
		o.Error = &RunError{Code: CodeException, Message: exc.Error()}
	default:
		o.Error = &RunError{Code: CodeException, Message: err.Error()}
	}
	return o, nil
}

// watch interrupts vm when the timeout passes, ctx ends, or the heap
// outgrows its limit, until stop closes. An interrupt only takes effect
// between JavaScript instructions, never inside a built-in written in Go
// (Array.prototype.fill over a length of 1e9, say), so watch has a last
// resort: when the VM has not stopped InterruptGrace after the interrupt, or
// the heap passes HardHeapBytes, it calls abort, which in the served skill
// ends the process; the host reports skill_crashed and starts it again.
func (r *Runner) watch(ctx context.Context, vm *goja.Runtime, timeout time.Duration, stop <-chan struct{}) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(r.limits.WatchEvery)
	defer tick.Stop()
	var interruptedAt time.Time // zero until the VM was asked to stop
	interrupt := func(v any) {
		if interruptedAt.IsZero() {
			vm.Interrupt(v)
			interruptedAt = time.Now()
		}
	}
	done := ctx.Done()
	for {
		select {
		case <-stop:
			return
		case <-done:
			done = nil
			interrupt(ctx.Err())
		case <-deadline.C:
			interrupt(&runError{CodeTimeout, fmt.Sprintf("the script ran longer than %v and was stopped", timeout)})
		case <-tick.C:
			heap := heapBytes()
			switch {
			case heap > r.limits.HardHeapBytes:
				r.abort(fmt.Sprintf("the heap reached %d MiB, past the hard limit of %d MiB, inside a built-in function the interrupt cannot stop", heap>>20, r.limits.HardHeapBytes>>20))
				return
			case !interruptedAt.IsZero() && time.Since(interruptedAt) > r.limits.InterruptGrace:
				r.abort(fmt.Sprintf("the script did not stop within %v of its interrupt: a built-in function is still running", r.limits.InterruptGrace))
				return
			case heap > r.limits.MaxHeapBytes:
				interrupt(&runError{CodeMemoryLimit, fmt.Sprintf("the heap grew to %d MiB, over the limit of %d MiB, and the script was stopped", heap>>20, r.limits.MaxHeapBytes>>20)})
			}
		}
	}
}

// heapBytes is the Go heap in use, live objects and those not yet swept.
// Reading it does not stop the world.
func heapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// install gives vm its console and the guards on built-ins that build a
// large string in one step, where the watchdog could only look afterwards.
func (r *Runner) install(vm *goja.Runtime, out *output) error {
	console := vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(name, out.log); err != nil {
			return err
		}
	}
	if err := vm.Set("console", console); err != nil {
		return err
	}
	strProto := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	for _, name := range []string{"repeat", "padStart", "padEnd"} {
		orig, ok := goja.AssertFunction(strProto.Get(name))
		if !ok {
			return fmt.Errorf("the runtime's String.prototype.%s is not a function", name)
		}
		guarded := func(call goja.FunctionCall) goja.Value {
			if n := r.resultLen(name, call); n > float64(r.limits.MaxStringLen) {
				panic(vm.NewTypeError("String.prototype.%s would build a string of %.0f characters; the limit is %d", name, n, r.limits.MaxStringLen))
			}
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		}
		if err := strProto.DefineDataProperty(name, vm.ToValue(guarded), goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return err
		}
	}
	return nil
}

// resultLen is the length of the string repeat, padStart or padEnd would build.
func (r *Runner) resultLen(name string, call goja.FunctionCall) float64 {
	n := call.Argument(0).ToFloat()
	if name == "repeat" {
		if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) {
			return 0 // the original throws its own TypeError
		}
		return float64(len(call.This.String())) * n
	}
	return n // padStart and padEnd build a string of the target length
}

// export turns the completion value into JSON text inside the
// interpreter, so a toJSON method or a getter still runs under the watchdog.
func (r *Runner) export(res goja.Value, out *output) (any, error) {
	if res == nil || goja.IsUndefined(res) {
		return nil, nil
	}
	s, err := out.json(res)
	if err != nil {
		return nil, err
	}
	if s == "" { // JSON has no text for a function or a symbol
		b, _ := json.Marshal(out.display(res))
		s = string(b)
	}
	if !out.reserve(len(s)) {
		return nil, &runError{CodeOutputLimit, fmt.Sprintf("the result is %d bytes of JSON; with what was printed it passes the output limit of %d bytes", len(s), out.max)}
	}
	return json.RawMessage(s), nil
}
