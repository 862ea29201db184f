package main

import (
	"runtime/debug"

	"github.com/skillhost/skillhost/sdk"
)

// newSkill builds the skill around r; tests serve it in-process with
// skilltest.Start.
func newSkill(r *Runner) *sdk.Skill {
	s := sdk.New("coderunner", "1.0.0",
		"Code runner: execute JavaScript (ES5.1 and much of ES2015+) in a sandboxed interpreter with no file or network access, "+
			"and return what it printed with console.log, the value of its last expression, or the error.")
	s.Tags = []string{"code", "javascript", "interpreter", "运行代码"}
	s.Author = "skillhost examples"
	// The host's call timeout sits above the largest script timeout, so a
	// slow script ends with the skill's own named timeout error first.
	s.Limits = &sdk.Limits{TimeoutMS: int(r.limits.MaxTimeout.Milliseconds()) + 10_000}

	sdk.Tool(s, "run_js",
		"Run JavaScript and return {ok, stdout, result, error}. Pass the code, or a message holding a ```js fenced block. "+
			"console.log prints to stdout; the value of the last expression statement is the result. "+
			"There is no require, no file system, no network and no timers. "+
			"Limits: 5 s by default (timeout_ms up to 20000), 64 KiB of output, 256 MiB of heap. "+
			"A script that fails comes back with ok=false and error.code syntax_error, exception, timeout, output_limit, memory_limit or stack_overflow.",
		r.Run, sdk.ReadOnly(), sdk.WithTags("run code", "execute", "js", "node"))
	return s
}

func main() {
	// A soft limit: the Go collector works harder as the heap nears the
	// watchdog's limit, so garbage alone rarely trips it.
	debug.SetMemoryLimit(int64(DefaultLimits.MaxHeapBytes))
	newSkill(NewRunner(Limits{})).Serve()
}
