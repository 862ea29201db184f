package loader

import (
	"context"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Operator controls. Each persists the decision first (so a change that
// cannot be persisted is refused, not half-applied), then rescans and waits
// until the skill has acted on it.

// Disable takes a skill out of service: its tools leave the registry and
// its instance drains. The decision survives restarts.
func (l *Loader) Disable(ctx context.Context, skill string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	if err := l.cfg.State.update(skill, func(s *skillState) { s.Disabled = true }); err != nil {
		return registry.Errorf(registry.CodeInternal, "disable %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

// Enable undoes Disable.
func (l *Loader) Enable(ctx context.Context, skill string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	if err := l.cfg.State.update(skill, func(s *skillState) { s.Disabled = false }); err != nil {
		return registry.Errorf(registry.CodeInternal, "enable %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

// Pin makes version the one that serves, whatever newer versions arrive.
// The version must be valid on disk now.
func (l *Loader) Pin(ctx context.Context, skill, version string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	tree, err := manifest.Scan(l.cfg.Skills, manifest.Options{StrictModes: l.cfg.StrictModes, Hashes: l.hashes})
	if err != nil {
		return registry.Errorf(registry.CodeInternal, "pin: scan: %v", err)
	}
	found := false
	for _, v := range tree.Versions {
		if v.Skill != skill || v.Version != version {
			continue
		}
		found = true
		if v.Status != manifest.StatusValid {
			return registry.Errorf(registry.CodeBadRequest, "cannot pin %s to %s: that version is %s: %v", skill, version, v.Status, v.Problems)
		}
	}
	if !found {
		return registry.Errorf(registry.CodeNotFound, "cannot pin %s to %s: no such version folder in %s", skill, version, l.cfg.Skills)
	}
	if err := l.cfg.State.update(skill, func(s *skillState) { s.Pin = version }); err != nil {
		return registry.Errorf(registry.CodeInternal, "pin %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

// Unpin lets the newest valid version serve again.
func (l *Loader) Unpin(ctx context.Context, skill string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	if err := l.cfg.State.update(skill, func(s *skillState) { s.Pin = "" }); err != nil {
		return registry.Errorf(registry.CodeInternal, "unpin %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

func (l *Loader) knownSkill(skill string) error {
	l.supMu.Lock()
	_, ok := l.sups[skill]
	l.supMu.Unlock()
	if !ok {
		return registry.Errorf(registry.CodeNotFound, "no skill named %q in %s", skill, l.cfg.Skills)
	}
	return nil
}

// Ready reports whether the first scan has settled: every valid skill
// started or failed.
func (l *Loader) Ready() bool { return l.ready.Load() }
