package proc

import (
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/skillhost/skillhost/sdk/proctree"
)

// A skill's process group holds the children it starts, so killing the
// group takes them down with it. A child that leaves the group (setsid,
// setpgid) would escape that, and without cgroups nothing else on Linux
// names all of a skill's descendants. What is left is the parent link: a
// process whose parent dies is re-parented to the nearest "child
// subreaper" among its ancestors. With a Sweeper the host is that
// subreaper, so everything a skill leaves behind becomes the host's child,
// and the sweeper below kills every child of the host it did not start.
//
// The price is a rule: a skill may start processes, but not ones that
// detach from their parent (a double fork). Such a process is an orphan the
// moment its parent exits, and the host kills it.

// sweepEvery is how often the sweeper looks for orphans besides the sweeps
// a skill's exit triggers: a process re-parented because an intermediate
// process (not the skill) died is found this late.
const sweepEvery = 2 * time.Second

// Sweeper finds and kills the host's orphaned children. Every child the
// loader starts is registered first: the host's only legitimate children are
// its skills and the reaper.
type Sweeper struct {
	self, sid, pgid int
	log             hclog.Logger
	kick            chan struct{} // capacity 1: kicks merge

	mu        sync.Mutex
	launching int          // skills being started whose pid is not known yet
	deferred  bool         // a sweep spared a child because a launch was under way
	known     map[int]bool // pids of the children the loader started
}

// NewSweeper makes the calling process a child subreaper and returns its
// sweeper, not yet running.
func NewSweeper(log hclog.Logger) (*Sweeper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err)
	}
	sid, _ := unix.Getsid(0)
	return &Sweeper{self: os.Getpid(), sid: sid, pgid: unix.Getpgrp(), log: log, kick: make(chan struct{}, 1), known: map[int]bool{}}, nil
}

// BeginLaunch records that a skill is being started whose pid is not
// known yet; EndLaunch follows.
func (s *Sweeper) BeginLaunch() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.launching++
	s.mu.Unlock()
}

// EndLaunch records pid (0: the start failed, and go-plugin has already
// waited for the process) as a child the loader started. The last launch
// to end asks for the sweep that children spared during launches wait for.
func (s *Sweeper) EndLaunch(pid int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.launching--
	if pid > 0 {
		s.known[pid] = true
	}
	again := s.launching == 0 && s.deferred
	if again {
		s.deferred = false
	}
	s.mu.Unlock()
	if again {
		s.Trigger()
	}
}

// Adopt records pid as a child the loader started outside a launch (the
// reaper).
func (s *Sweeper) Adopt(pid int) {
	if s == nil || pid <= 0 {
		return
	}
	s.mu.Lock()
	s.known[pid] = true
	s.mu.Unlock()
}

// Forget drops pid once its process has been waited for: the pid may be
// reused by anyone after that.
func (s *Sweeper) Forget(pid int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.known, pid)
	s.mu.Unlock()
}

// Trigger asks for a sweep soon, after a skill exited: its orphans are the
// host's children by the time its exit is seen.
func (s *Sweeper) Trigger() {
	if s == nil {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run sweeps on every trigger and every sweepEvery until done is closed,
// then once more.
func (s *Sweeper) Run(done <-chan struct{}) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			s.sweep()
			return
		case <-s.kick:
		case <-t.C:
		}
		if s.sweep() > 0 {
			// The orphans' own children are orphans now: look again soon.
			time.AfterFunc(50*time.Millisecond, s.Trigger)
		}
	}
}

// sweep kills and reaps every child of the host the loader did not start,
// and returns how many it found. While a skill is being started, a child
// that looks like a freshly started skill may be that skill and is left for
// the sweep EndLaunch asks for. Such a child is in the host's session and
// in a process group of its own, or, between the fork and its setpgid (a
// window a loaded machine widens), still in the host's group: killing it
// there failed the skill's start with an empty stdout.
func (s *Sweeper) sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range proctree.List() {
		if p.PPID != s.self || s.known[p.PID] {
			continue
		}
		if s.launching > 0 && p.SID == s.sid && (p.PGID == p.PID || p.PGID == s.pgid) {
			s.deferred = true
			continue
		}
		n++
		if !p.Zombie() {
			s.log.Warn("killing a process a skill left behind (its parent exited)", "pid", p.PID, "command", p.Comm)
			_ = unix.Kill(p.PID, unix.SIGKILL)
			if p.PGID == p.PID {
				_ = unix.Kill(-p.PID, unix.SIGKILL) // a group of its own: take its members too
			}
		}
		go reapPID(p.PID)
	}
	return n
}

// reapPID waits for one orphan, which is the host's child now; it never
// waits for any other pid, so os/exec keeps its own children's statuses.
func reapPID(pid int) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, 0, nil)
		if err != unix.EINTR {
			return
		}
	}
}
