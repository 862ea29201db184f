//go:build !linux

package proc

// Harden does nothing off Linux: there is no dumpable flag to clear.
func Harden() error { return nil }
