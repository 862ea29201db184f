package loader

import (
	"fmt"
	"io"
	"log"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// pidLogger adds "pid" to every line once the skill's pid is known. go-plugin
// takes its logger (for the skill's stderr and its own lines) and the writers
// for the skill's stdout and stderr before the process exists, so a logger
// that gets the pid afterwards is the only way every line of a skill can carry
// it, as operators grep for it.
//
// It also remembers how the process ended: go-plugin reaps the process
// itself and says so only in its log ("plugin process exited", with the
// exit status or signal as "error").
type pidLogger struct {
	hclog.Logger
	pid  *atomic.Int64           // 0 until the process has started; shared by every derived logger
	exit *atomic.Pointer[string] // how the process ended, once go-plugin logged it; shared too
}

func newPIDLogger(l hclog.Logger) *pidLogger {
	return &pidLogger{Logger: l, pid: new(atomic.Int64), exit: new(atomic.Pointer[string])}
}

// exitStatus is what go-plugin logged about the end of the process ("signal:
// killed", "exit status 2"), or "" before it did.
func (l *pidLogger) exitStatus() string {
	if p := l.exit.Load(); p != nil {
		return *p
	}
	return ""
}

func (l *pidLogger) setPID(pid int) { l.pid.Store(int64(pid)) }

func (l *pidLogger) args(args []any) []any {
	if pid := l.pid.Load(); pid != 0 {
		return append([]any{"pid", pid}, args...)
	}
	return args
}

func (l *pidLogger) Log(level hclog.Level, msg string, args ...any) {
	if msg == "plugin process exited" {
		status := "exit status 0"
		for i := 0; i+1 < len(args); i += 2 {
			if args[i] == "error" {
				status = fmt.Sprint(args[i+1])
			}
		}
		l.exit.Store(&status)
	}
	l.Logger.Log(level, msg, l.args(args)...)
}
func (l *pidLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *pidLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *pidLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *pidLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *pidLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *pidLogger) With(args ...any) hclog.Logger {
	return &pidLogger{Logger: l.Logger.With(args...), pid: l.pid, exit: l.exit}
}
func (l *pidLogger) Named(name string) hclog.Logger {
	return &pidLogger{Logger: l.Logger.Named(name), pid: l.pid, exit: l.exit}
}
func (l *pidLogger) ResetNamed(name string) hclog.Logger {
	return &pidLogger{Logger: l.Logger.ResetNamed(name), pid: l.pid, exit: l.exit}
}

// StandardWriter returns a writer that logs each write as one line at
// opts.ForceLevel (Info when unset), through l so that it carries the pid.
func (l *pidLogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return lineWriter{l: l, level: level}
}

func (l *pidLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

type lineWriter struct {
	l     *pidLogger
	level hclog.Level
}

func (w lineWriter) Write(p []byte) (int, error) {
	if s := strings.TrimRight(string(p), " \t\r\n"); s != "" {
		w.l.Log(w.level, s)
	}
	return len(p), nil
}
