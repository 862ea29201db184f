// Command noterm is a raw skill (no SDK) that ignores SIGTERM and does not
// watch its parent: the host's parent-death signal (SIGTERM) cannot end it.
package main

import (
	"os/signal"
	"syscall"

	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

func main() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	kit.ServeRaw(kit.EchoServer{})
}
