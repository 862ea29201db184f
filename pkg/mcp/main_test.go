package mcp_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/internal/testenv"
)

// hostBin and skillBin are built once: the real daemon (cmd/host) and the
// test skill (internal/testskill), which plays any skill name and version.
var hostBin, skillBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-test-")
	if err != nil {
		panic(err)
	}
	for _, b := range []struct {
		dst *string
		pkg string
	}{{&hostBin, "./cmd/host"}, {&skillBin, "./internal/testskill"}} {
		if *b.dst, err = testenv.Build(dir, b.pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		http.DefaultClient.CloseIdleConnections() // testenv.Daemon.Do's keep-alives
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
