package main

import (
	"errors"
	"flag"
	"os"
	"strconv"

	"github.com/skillhost/skillhost/pkg/host"
)

// skillUserFlag adds --skill-user to a command that runs skills.
func skillUserFlag(fs *flag.FlagSet, dst *string, prefix string) {
	fs.StringVar(dst, "skill-user", os.Getenv("SKILLHOST_SKILL_USER"),
		prefix+"run every skill as this account (a name, a uid, or uid:gid; env SKILLHOST_SKILL_USER). Needs a host running as root; recommended then, e.g. nobody")
}

// runtimeFlag adds the repeatable --runtime name=/abs/path to a command
// that runs skills: the interpreters "runtime": "mcp" manifests may name.
func runtimeFlag(fs *flag.FlagSet, dst *host.Interpreters, prefix string) {
	*dst = host.Interpreters{}
	fs.Var(*dst, "runtime",
		prefix+"allow MCP-server skills to run this interpreter, as `name=/absolute/path` (repeatable, e.g. --runtime node=/usr/bin/node); a manifest names it by name and can run no other host program")
}

// skillProcsFlag adds --skill-gomaxprocs to a command that runs skills.
func skillProcsFlag(fs *flag.FlagSet, dst *int, prefix string) {
	fs.Func("skill-gomaxprocs",
		prefix+"start every skill whose manifest env sets no GOMAXPROCS with GOMAXPROCS=`n`; 1 suits a machine of one or two cores (default 0: Go's own, a processor per core)",
		func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return errors.New("must be a whole number, 0 (Go's default) or more")
			}
			*dst = n
			return nil
		})
}
