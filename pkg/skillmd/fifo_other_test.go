//go:build !unix

package skillmd

import "testing"

const haveFIFOs = false

func mkfifo(t *testing.T, _ string) { t.Skip("no FIFOs here") }
