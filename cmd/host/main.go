package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/proc"
)

// Exit codes, so scripts can tell failures apart.
const (
	exitOK          = 0
	exitFailure     = 1 // the command ran and found problems, or a tool refused
	exitUsage       = 2
	exitUnreachable = 3 // the daemon could not be reached
)

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// process is what a command that runs a daemon gets from the caller: a
// context whose end stops it (as a signal does), and whether the daemon may
// change the process it runs in (host.Config.OwnsProcess), which only main
// allows.
type process struct {
	ctx  context.Context
	owns bool
}

func commands(p process) []command {
	return []command{
		{"serve", "run the daemon", p.serve},
		{"validate", "check a version folder, a skill folder or a whole tree", runValidate},
		{"skills", "list skills and their versions' states", runSkills},
		{"tools", "list or rank tools (-q TEXT, --tag T)", runTools},
		{"call", "invoke a tool: host call NAME '{json}'", runCall},
		{"rescan", "rescan the skills tree now", runRescan},
		{"enable", "put a disabled skill back in service", runEnable},
		{"disable", "take a skill out of service (persists)", runDisable},
		{"pin", "serve one version of a skill: host pin NAME VERSION", runPin},
		{"unpin", "serve the newest valid version again", runUnpin},
		{"events", "follow the lifecycle event stream", runEvents},
		{"fleet", "list the hosts of the daemon's fleet and which build each serves", runFleet},
		{"push", "pack a version folder as an OCI artifact and make it the fleet's desired version", runPush},
		{"eval-prefilter", "measure the prefilter's recall on a tool catalog and queries", runEvalPrefilter},
		{"chat", "ask the daemon's agent loop a question, showing tool calls as they happen", runChat},
		{"run", "start a multi-agent flow and stream its transcript: host run FLOW 'task'", runRun},
		{"runs", "list runs, show one, post a human message into it (--say) or stop it (--stop)", runRuns},
		{"team", "agent teams: create, list, show, send, spawn, stop, follow (host team help)", runTeam},
		{"mcp", "serve MCP on stdio: embed a host over --skills, or bridge to a daemon with --addr", p.mcp},
	}
}

func main() {
	// First: a host starts this binary again as its skills' watchdog
	// (proc.ReaperCommand), and that process must run nothing else.
	proc.MaybeRunReaper()
	os.Exit(dispatch(process{ctx: context.Background(), owns: true}, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command line as a test runs it, in the test's own process:
// a daemon it starts leaves the process as it found it (no watchdog, no
// subreaper, still dumpable).
func run(args []string, stdout, stderr io.Writer) int {
	return dispatch(process{ctx: context.Background()}, args, stdout, stderr)
}

func dispatch(p process, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands(p) {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "host: unknown command %q\n\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: host COMMAND [flags]\n\ncommands:")
	for _, c := range commands(process{}) {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'host COMMAND -h' for a command's flags.")
}

// newLogger builds the host's logger.
func newLogger(w io.Writer, format, level string) (hclog.Logger, error) {
	lvl := hclog.LevelFromString(level)
	if lvl == hclog.NoLevel {
		return nil, fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", level)
	}
	switch strings.ToLower(format) {
	case "text", "json":
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	return hclog.New(&hclog.LoggerOptions{
		Name: "skillhost", Level: lvl, Output: w, JSONFormat: format == "json",
	}), nil
}

// logFlags adds --log-format and --log-level to fs.
func logFlags(fs *flag.FlagSet, format, level *string) {
	fs.StringVar(format, "log-format", "text", "log format (to stderr): text or json")
	fs.StringVar(level, "log-level", "info", "log level: trace, debug, info, warn, error")
}

// parseLogged parses a long-running command's flags, which take no
// arguments, and builds its logger. When it returns ok false the command
// ends with code (0 for -h).
func parseLogged(name string, fs *flag.FlagSet, args []string, stderr io.Writer, format, level *string) (log hclog.Logger, code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, exitOK, false
		}
		return nil, exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "host %s: unexpected argument %q\n", name, fs.Arg(0))
		return nil, exitUsage, false
	}
	log, err := newLogger(stderr, *format, *level)
	if err != nil {
		fmt.Fprintf(stderr, "host %s: %v\n", name, err)
		return nil, exitUsage, false
	}
	return log, exitOK, true
}
