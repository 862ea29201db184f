package chart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// hostBin is this tree's `host`, built once for the tests that ask it
// which flags it takes and run it with the chart's arguments.
var hostBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skillhost-chart-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hostBin = filepath.Join(dir, "host")
	build := exec.Command("go", "build", "-o", hostBin, "./cmd/host")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/host: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
