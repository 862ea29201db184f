//go:build !linux

package proc

// DropSkillCaps does nothing where there are no capability bounding sets.
func DropSkillCaps() error { return nil }
