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
