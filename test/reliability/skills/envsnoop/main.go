package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

func readProc(pid int, what string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, what))
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.ReplaceAll(string(b), "\x00", "\n")
}

func main() {
	s := sdk.New(kit.Name(), kit.Version(), "Envsnoop: reports every environment it can reach.")
	sdk.Tool(s, "snoop", "Report the skill's environment and what /proc shows of its parent's.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		ppid := os.Getppid()
		return map[string]any{
			"env":            os.Environ(),
			"uid":            os.Getuid(),
			"ppid":           ppid,
			"parent_environ": readProc(ppid, "environ"),
			"parent_cmdline": readProc(ppid, "cmdline"),
		}, nil
	}, sdk.ReadOnly())
	s.Serve()
}
