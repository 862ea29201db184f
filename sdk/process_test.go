package sdk_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk"
)

// helperEnv selects what the test binary does when a test re-executes it
// as a skill process (the helper-process pattern: no build step).
const helperEnv = "SDK_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0) // Serve does not return; a mode that does ends here
	}
	os.Exit(m.Run())
}

// helpers are the processes the test binary can be, by mode; files for
// one system add theirs in init.
var helpers = map[string]func(){
	"renamed": func() {
		s := sdk.New("fine", "1.0.0", "Renamed after New.")
		s.Version = "1.0"
		s.Serve()
	},
}

// runHelper is the process for mode.
func runHelper(mode string) {
	if h, ok := helpers[mode]; ok {
		h()
	}
}

// helper returns a command that runs the test binary as the skill process
// for mode, with only env in its environment besides the mode.
func helper(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append([]string{helperEnv + "=" + mode}, env...)
	return cmd
}

// TestServeRefusesAnInvalidSkill checks that Serve, before anything else,
// refuses a skill whose fields were changed after New to what the host
// would refuse.
func TestServeRefusesAnInvalidSkill(t *testing.T) {
	for _, args := range [][]string{nil, {"--manifest"}} {
		cmd := helper("renamed")
		cmd.Args = append(cmd.Args, args...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), `sdk: skill fine: version "1.0" is not a semantic version`) {
			t.Errorf("args %q: %v, output %q; want status 1 and the reason", args, err, out)
		}
	}
}
