package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/sdk"
)

// fibonacci is how a typical coder answers "compute the 39th Fibonacci
// number": a fenced block with prose around it.
const fibonacci = "Here is the code:\n\n```javascript\n" + `function fibonacci(n) {
  if (n <= 1) return n;
  let a = 0, b = 1;
  for (let i = 2; i <= n; i++) {
    [a, b] = [b, a + b];
  }
  return b;
}
const memo = new Map();
const fib = (n) => n < 2 ? n : memo.get(n) ?? (memo.set(n, fib(n - 1) + fib(n - 2)), memo.get(n));
console.log(` + "`The 39th Fibonacci number is ${fibonacci(39)}`" + `);
fib(39) === fibonacci(39) ? { n: 39, value: fib(39) } : "mismatch";
` + "```\n\nRun it and tell me the result."

// newRunner is NewRunner whose last resort fails the test instead of
// ending the test binary.
func newRunner(t testing.TB, l Limits) *Runner {
	r := NewRunner(l)
	r.abort = func(reason string) { t.Errorf("the watchdog's last resort: %s", reason) }
	return r
}

func run(t *testing.T, r *Runner, in runIn) runOut {
	t.Helper()
	out, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatalf("Run(%q) = %v", in.Code, err)
	}
	return out
}

func TestFibonacci(t *testing.T) {
	out := run(t, newRunner(t, Limits{}), runIn{Code: fibonacci})
	if !out.OK || out.Error != nil {
		t.Fatalf("run = %+v", out)
	}
	if out.Stdout != "The 39th Fibonacci number is 63245986\n" {
		t.Errorf("stdout = %q", out.Stdout)
	}
	b, _ := json.Marshal(out.Result)
	if string(b) != `{"n":39,"value":63245986}` {
		t.Errorf("result = %s", b)
	}
}

func TestScriptErrors(t *testing.T) {
	r := newRunner(t, Limits{DefaultTimeout: 200 * time.Millisecond, MaxOutputBytes: 1000, MaxCallDepth: 500})
	for _, tc := range []struct {
		name, code, wantCode, wantMsg, wantStdout string
	}{
		{"syntax", "function (", CodeSyntax, "code.js: Line 1:10 Unexpected token (", ""},
		{"throw", "console.log('before'); throw new RangeError('bad n')", CodeException, "RangeError: bad n at code.js:1:30", "before\n"},
		{"caught throw is fine", "try { null.x } catch (e) { console.log(e.name) }; throw 'again'", CodeException, "again", "TypeError\n"},
		{"reference", "undefinedThing + 1", CodeException, "ReferenceError: undefinedThing is not defined", ""},
		{"infinite loop", "console.log('start'); for (;;) {}", CodeTimeout, "the script ran longer than 200ms and was stopped", "start\n"},
		{"loop that catches everything", "for (;;) { try { while (true) {} } catch (e) {} }", CodeTimeout, "ran longer than 200ms", ""},
		{"recursion", "function f(n) { return f(n + 1) + 1 } f(0)", CodeStackOverflow, "call depth exceeded 500", ""},
		{"huge output", "for (let i = 0; ; i++) console.log('line', i)", CodeOutputLimit, "printed more than the output limit of 1000 bytes", ""},
		{"huge result", "'x'.repeat(2000)", CodeOutputLimit, "the result is 2002 bytes of JSON", ""},
		{"one huge string", "'ab'.repeat(1 << 30)", CodeException, "TypeError: String.prototype.repeat would build a string of 2147483648 characters; the limit is 1048576", ""},
		{"huge pad", "''.padEnd(1e12, 'x')", CodeException, "String.prototype.padEnd would build", ""},
		{"no require", "require('fs')", CodeException, "ReferenceError: require is not defined", ""},
		{"no timers", "setTimeout(() => 1, 0)", CodeException, "ReferenceError: setTimeout is not defined", ""},
		{"cyclic result", "const a = {}; a.self = a; a", CodeException, "TypeError", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, r, runIn{Code: tc.code})
			if out.OK || out.Error == nil || out.Error.Code != tc.wantCode || !strings.Contains(out.Error.Message, tc.wantMsg) {
				t.Fatalf("run = %+v, error %+v; want code %s with %q", out, out.Error, tc.wantCode, tc.wantMsg)
			}
			if tc.wantStdout != "" && out.Stdout != tc.wantStdout {
				t.Errorf("stdout = %q, want %q", out.Stdout, tc.wantStdout)
			}
		})
	}
}

func TestOutputCap(t *testing.T) {
	r := newRunner(t, Limits{MaxOutputBytes: 4096})
	out := run(t, r, runIn{Code: "while (true) console.log('x'.repeat(100))"})
	if out.Error == nil || out.Error.Code != CodeOutputLimit || !out.StdoutTruncated || len(out.Stdout) != 4096 {
		t.Fatalf("stdout %d bytes, truncated=%v, error %+v", len(out.Stdout), out.StdoutTruncated, out.Error)
	}
	if out.DurationMS > 1000 {
		t.Errorf("a capped script ran %v ms; the cap should stop it at once", out.DurationMS)
	}
}

func TestMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 64 MiB")
	}
	r := newRunner(t, Limits{MaxHeapBytes: 64 << 20, DefaultTimeout: 10 * time.Second})
	out := run(t, r, runIn{Code: "const keep = []; for (let i = 0; ; i++) keep.push('x'.repeat(100000) + i)"})
	if out.Error == nil || out.Error.Code != CodeMemoryLimit || !strings.Contains(out.Error.Message, "over the limit of 64 MiB") {
		t.Fatalf("run = %+v", out.Error)
	}
	// The garbage it left is not charged to the next script.
	if out := run(t, r, runIn{Code: "let n = 0; for (let i = 0; i < 3e5; i++) n += i; n"}); !out.OK || out.DurationMS < 20 {
		t.Fatalf("the run after a memory_limit (%v ms, long enough for the watchdog to look) = %+v", out.DurationMS, out.Error)
	}
}

func TestDisplayAndResult(t *testing.T) {
	r := newRunner(t, Limits{})
	out := run(t, r, runIn{Code: "console.log(1, 'two', [3], {four: 4}, null, undefined, new Error('five'), function six() {}, () => 7, 2n ** 70n); Symbol('s')"})
	if want := "1 two [3] {\"four\":4} null undefined Error: five [Function: six] [Function (anonymous)] 1180591620717411303424\n"; out.Stdout != want {
		t.Errorf("stdout = %q, want %q", out.Stdout, want)
	}
	if b, _ := json.Marshal(out.Result); string(b) != `"Symbol(s)"` {
		t.Errorf("symbol result = %s", b)
	}
	if out := run(t, r, runIn{Code: "let x = 1"}); out.Result != nil || !out.OK {
		t.Errorf("a script ending in a declaration = %+v", out)
	}
	// Each call has a fresh interpreter: nothing leaks from the call before.
	run(t, r, runIn{Code: "globalThis.leak = 1; Array.prototype.evil = 1"})
	out = run(t, r, runIn{Code: "typeof leak + ' ' + typeof [].evil"})
	if b, _ := json.Marshal(out.Result); string(b) != `"undefined undefined"` {
		t.Errorf("state leaked between calls: result %s", b)
	}
}

func TestInvalidInput(t *testing.T) {
	r := newRunner(t, Limits{})
	for _, tc := range []struct {
		in       runIn
		wantCode string
	}{
		{runIn{Code: "  \n"}, "invalid_arguments"},
		{runIn{Code: "```js\n```"}, "invalid_arguments"},
		{runIn{Code: "1", TimeoutMS: 60_000}, "invalid_arguments"},
		{runIn{Code: "```python\nprint(1)\n```"}, "unsupported_language"},
	} {
		_, err := r.Run(context.Background(), tc.in)
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != tc.wantCode {
			t.Errorf("Run(%+v) = %v, want %s", tc.in, err, tc.wantCode)
		}
	}
}

func TestCancel(t *testing.T) {
	r := newRunner(t, Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := r.Run(ctx, runIn{Code: "for (;;) {}"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run with a context that ends = %v, want context.DeadlineExceeded", err)
	}
}

func TestExtractCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1 + 1", "1 + 1"},
		{"```js\na()\n```", "a()"},
		{"text\n```JavaScript\na()\n```\nmore\n```\nb()\n```\n~~~python\nc()\n~~~", "a()\nb()"},
		{"````js\n```\ninner\n````", "```\ninner"},
		{"```js\nunclosed()", "unclosed()"},
		{"use ```x``` inline", "use ```x``` inline"},
	} {
		got, err := extractCode(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("extractCode(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// BenchmarkFibonacci is one run_js call of the coder's program, in-process:
// a fresh runtime, the watchdog, the run and the JSON result.
func BenchmarkFibonacci(b *testing.B) {
	r := newRunner(b, Limits{})
	for b.Loop() {
		if out, err := r.Run(context.Background(), runIn{Code: fibonacci}); err != nil || !out.OK {
			b.Fatal(out, err)
		}
	}
}
