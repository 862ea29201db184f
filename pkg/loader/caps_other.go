//go:build !linux

package loader

import "sync"

var warnCapsOnce sync.Once

// dropSkillCaps does nothing where there are no capability bounding sets.
func dropSkillCaps() error { return nil }
