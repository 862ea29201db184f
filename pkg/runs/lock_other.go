//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package runs

import "os"

// lockFile is a no-op where flock is missing: there, one daemon per state
// folder is the operator's promise.
func lockFile(*os.File) error { return nil }
