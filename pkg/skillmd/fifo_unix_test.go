//go:build unix

package skillmd

import (
	"syscall"
	"testing"
)

const haveFIFOs = true

func mkfifo(t *testing.T, p string) {
	t.Helper()
	must(t, syscall.Mkfifo(p, 0o644))
}
