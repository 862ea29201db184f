package main

import (
	"errors"
	"flag"
	"os"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/proc"
)

// skillUserFlag adds --skill-user to a command that runs skills.
func skillUserFlag(fs *flag.FlagSet, dst *string, prefix string) {
	fs.StringVar(dst, "skill-user", os.Getenv("SKILLHOST_SKILL_USER"),
		prefix+"run every skill as this account (a name, a uid, or uid:gid; env SKILLHOST_SKILL_USER). Needs a host running as root; recommended then, e.g. nobody")
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

// isolateSkills does what keeps the host's secrets from its skills before
// any skill starts: it makes the host non-dumpable (a skill running as the
// host's user cannot read its /proc/<pid>/environ or memory) and resolves
// the account skills run as. A host running as root with skills as root
// gets a warning: the loader withholds the capabilities that would read
// the host's memory (ptrace and the like), but a root skill can still write
// root's files.
func isolateSkills(log hclog.Logger, skillUser string) (*proc.SkillUser, error) {
	if err := proc.Harden(); err != nil {
		log.Warn("cannot make the host non-dumpable; skills running as its user can read its environment", "error", err)
	}
	if skillUser == "" {
		if os.Geteuid() == 0 {
			log.Warn("the host runs as root and so do its skills: they start without the capabilities that read another process's memory, so the host's environment stays out of their reach, but they can write anything root can; pass --skill-user nobody (or run the host as its own user)")
		}
		return nil, nil
	}
	u, err := proc.LookupSkillUser(skillUser)
	if err != nil {
		return nil, err
	}
	log.Info("skills run as another account", "skill_user", u.String())
	return u, nil
}
