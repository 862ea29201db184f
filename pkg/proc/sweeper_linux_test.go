package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/testenv"
)

const sweeperHelperEnv = "PROC_TEST_SWEEPER_HELPER"

// TestSweeperKillsOrphans runs the sweeper in a child process of its own,
// never in the test binary (a subreaper flag cannot be taken back). There a
// shell the child started and knows leaves a sleeper behind and exits; the
// sleeper becomes the child's (it is the subreaper), and the sweeper must
// kill it, while a process the child started itself and registered lives.
// A child still in the helper's process group while a launch is under way,
// as a skill is between its fork and its setpgid, is spared until the
// launch ends, and swept then since the launch did not claim it.
func TestSweeperKillsOrphans(t *testing.T) {
	if os.Getenv(sweeperHelperEnv) == "1" {
		sweeperHelper()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweeperKillsOrphans$")
	cmd.Env = append(os.Environ(), sweeperHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil || !strings.Contains(text, "orphan killed") || !strings.Contains(text, "known child alive") ||
		!strings.Contains(text, "launching child spared") || !strings.Contains(text, "unclaimed child swept") {
		t.Fatalf("helper: %v\n%s", err, text)
	}
	var orphan int
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "orphan pid "); ok {
			orphan, _ = strconv.Atoi(v)
		}
	}
	if orphan == 0 || testenv.Alive(orphan) {
		t.Errorf("orphan %d still alive", orphan)
	}
}

// sweeperHelper is the child's side; it prints what it saw and exits.
func sweeperHelper() {
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(1)
	}
	sw, err := NewSweeper(hclog.NewNullLogger())
	if err != nil {
		fail("NewSweeper: %v", err)
	}
	known := exec.Command("sleep", "60")
	if err := known.Start(); err != nil {
		fail("start: %v", err)
	}
	sw.Adopt(known.Process.Pid)
	defer known.Process.Kill()

	sh := exec.Command("sh", "-c", "sleep 60 & echo $!")
	stdout, _ := sh.StdoutPipe()
	sw.BeginLaunch()
	if err := sh.Start(); err != nil {
		fail("start sh: %v", err)
	}
	sw.EndLaunch(sh.Process.Pid)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	orphan, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		fail("orphan pid %q: %v", line, err)
	}
	fmt.Printf("orphan pid %d\n", orphan)
	sh.Wait()
	sw.Forget(sh.Process.Pid)

	fresh := exec.Command("sleep", "60")
	sw.BeginLaunch()
	if err := fresh.Start(); err != nil {
		fail("start: %v", err)
	}
	defer fresh.Process.Kill()
	if n := sw.sweep(); n != 0 || !testenv.Alive(fresh.Process.Pid) {
		fail("a sweep during a launch killed a child in the helper's process group (%d found)", n)
	}
	sw.EndLaunch(0) // the start failed: the child is nobody's
	select {
	case <-sw.kick:
		sw.Trigger() // for Run below
	default:
		fail("the end of a launch during which a sweep spared a child asked for no sweep")
	}
	fmt.Println("launching child spared")

	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		sw.Run(done)
	}()
	sw.Trigger() // as a skill's exit does
	if testenv.WaitFor(5*time.Second, func() bool { return !testenv.Alive(orphan) }) {
		fmt.Println("orphan killed")
	}
	if testenv.WaitFor(5*time.Second, func() bool { return !testenv.Alive(fresh.Process.Pid) }) {
		fmt.Println("unclaimed child swept")
	}
	close(done)
	<-stopped
	if testenv.Alive(known.Process.Pid) {
		fmt.Println("known child alive")
	}
}
