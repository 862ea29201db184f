// Command stuck is a hostile skill that never completes the handshake and
// ignores SIGTERM and SIGINT: only SIGKILL ends it.
package main

import (
	"os/signal"
	"syscall"
	"time"
)

func main() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	for {
		time.Sleep(time.Hour)
	}
}
