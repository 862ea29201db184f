package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

type forkIn struct {
	N      int  `json:"n" jsonschema:"minimum=1,maximum=16"`
	Escape bool `json:"escape,omitempty" jsonschema:"description=also start one child in a new session, outside the process group"`
}

func main() {
	s := sdk.New(kit.Name(), kit.Version(), "Forker: starts children and dies.")
	sdk.Tool(s, "fork_and_die", "Start n sleeping children, answer with their pids, exit 100 ms later.", func(ctx context.Context, in forkIn) (map[string][]int, error) {
		out, err := fork(in)
		go func() {
			time.Sleep(100 * time.Millisecond)
			os.Exit(9) // no SDK cleanup: the children are left behind
		}()
		return out, err
	})
	sdk.Tool(s, "fork", "Start n sleeping children and answer with their pids; the skill lives on.", func(ctx context.Context, in forkIn) (map[string][]int, error) {
		return fork(in)
	})
	sdk.Tool(s, "echo", "Answer with the pid.", func(ctx context.Context, in struct{}) (map[string]int, error) {
		return map[string]int{"pid": os.Getpid()}, nil
	}, sdk.ReadOnly())
	s.Serve()
}

// fork starts in.N children, each with a sibling shell that forks a
// grandchild, and with in.Escape one more child in a new session.
func fork(in forkIn) (map[string][]int, error) {
	out := map[string][]int{"children": nil, "escaped": nil}
	for i := 0; i < in.N; i++ {
		c := exec.Command("/bin/sleep", "300")
		if err := c.Start(); err != nil {
			return nil, err
		}
		out["children"] = append(out["children"], c.Process.Pid)
		// Grandchildren too: a shell that forks its own sleeper. The
		// answer waits for the shell to print the sleeper's pid, so the
		// grandchild exists by the time a test counts processes.
		g := exec.Command("/bin/sh", "-c", "/bin/sleep 300 & echo $!; wait")
		stdout, err := g.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := g.Start(); err != nil {
			return nil, err
		}
		out["children"] = append(out["children"], g.Process.Pid)
		line, err := bufio.NewReader(stdout).ReadString('\n')
		stdout.Close()
		if err != nil {
			return nil, fmt.Errorf("the shell did not report its sleeper: %q: %w", line, err)
		}
	}
	if in.Escape {
		c := exec.Command("/bin/sleep", "300")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err == nil {
			out["escaped"] = append(out["escaped"], c.Process.Pid)
		}
	}
	return out, nil
}
