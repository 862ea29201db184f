//go:build unix

package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/skillhost/skillhost/sdk/proctree"
)

// Reaper is the host's side of a watchdog process that outlives the host for
// one purpose: when the host dies without stopping its skills (SIGKILL, a
// runtime crash), kill every skill's process group. The parent-death signal
// alone cannot: it is SIGTERM (so the SDK can take its children down), and a
// skill that ignores SIGTERM would outlive its host.
//
// The host tells the watchdog, over a pipe, which process groups it runs
// ("+PGID") and which it stopped ("-PGID", so a reused id is never killed).
// A clean stop says "bye" and closes the pipe; the watchdog then exits
// without killing anything. End of file without "bye" means the host died.
type Reaper struct {
	mu  sync.Mutex // guards w
	w   io.WriteCloser
	cmd *exec.Cmd
}

// reaperEnv marks the watchdog process. The marker is in the environment,
// not the arguments, so that a binary's own argument parsing never sees it:
// the binary calls MaybeRunReaper first thing in main (a test binary, in
// TestMain), which turns the process into the watchdog and never returns.
const reaperEnv = "SKILLHOST_SKILL_REAPER"

// MaybeRunReaper runs the watchdog and exits when this process was started
// as one (by StartReaper), and returns at once otherwise. A binary whose
// argv it passes to StartReaper must call it at the top of main, before it
// parses flags or starts anything: importing this package does nothing by
// itself.
func MaybeRunReaper() {
	if os.Getenv(reaperEnv) == "1" {
		os.Exit(runReaper(os.Stdin))
	}
}

// StartReaper starts argv (a binary that calls MaybeRunReaper at the top of
// its main, and arguments that only name it in ps) as the watchdog. It gets no environment but its
// marker: nothing of the host's (keys included) is passed on.
func StartReaper(argv []string) (*Reaper, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{reaperEnv + "=1"}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	// Its own process group: a terminal's ^C to the host's group must not
	// take the watchdog with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proc: start the skill reaper %s: %w", argv[0], err)
	}
	return &Reaper{w: w, cmd: cmd}, nil
}

func (r *Reaper) send(line string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		// A write that fails means the watchdog is gone; the skills still
		// have their parent-death signal, so there is nothing better to do.
		_, _ = io.WriteString(r.w, line+"\n")
	}
}

// PID is the watchdog's own process id (0 for a nil Reaper).
func (r *Reaper) PID() int {
	if r == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Track tells the watchdog that process group pgid runs a skill; Untrack,
// that it was stopped. Both are no-ops on a nil Reaper.
func (r *Reaper) Track(pgid int)   { r.send("+" + strconv.Itoa(pgid)) }
func (r *Reaper) Untrack(pgid int) { r.send("-" + strconv.Itoa(pgid)) }

// Close tells the watchdog the host stopped its skills itself, and waits for
// it to exit. Safe to call twice.
func (r *Reaper) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	w := r.w
	r.w = nil
	r.mu.Unlock()
	if w == nil {
		return
	}
	_, _ = io.WriteString(w, "bye\n")
	w.Close()
	_ = r.cmd.Wait()
}

// runReaper is the watchdog's main loop (see Reaper): it reads the
// host's messages from in until end of file, then, unless the host said
// "bye", kills every process group still tracked and every descendant of
// their members (proctree.Kill). It ignores the signals a terminal or service
// manager sends a process group, so that only the host's death ends it. It
// returns the process's exit code.
func runReaper(in io.Reader) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	groups := map[int]bool{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if line == "bye" {
			return 0
		}
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue // never kill(-1) or kill(-0): only real process groups
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	if len(groups) == 0 {
		return 0
	}
	pgids := make([]int, 0, len(groups))
	for pgid := range groups {
		pgids = append(pgids, pgid)
	}
	// Not just the groups: a skill's child may have left its group
	// (setsid), and only its parent link still ties it to the skill.
	n := proctree.Kill(pgids, nil)
	fmt.Fprintf(os.Stderr, "skillhost reaper: the host died without stopping its skills; killed %d process group(s), %d process(es)\n", len(groups), n)
	return 0
}
