package loader

import (
	"context"
	"fmt"

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
	if err := l.cfg.State.Update(skill, func(s *Decision) { s.Disabled = true }); err != nil {
		return registry.Errorf(registry.CodeInternal, "disable %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

// Enable undoes Disable.
func (l *Loader) Enable(ctx context.Context, skill string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	if err := l.cfg.State.Update(skill, func(s *Decision) { s.Disabled = false }); err != nil {
		return registry.Errorf(registry.CodeInternal, "enable %s: %v", skill, err)
	}
	return l.Rescan(ctx)
}

// Pin makes version the one that serves, whatever newer versions arrive.
// The version must be valid on disk now, and start: a pin whose version
// fails to start is undone, and the error says why.
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
	_, prev := l.cfg.State.Get(skill)
	if err := l.cfg.State.Update(skill, func(s *Decision) { s.Pin = version }); err != nil {
		return registry.Errorf(registry.CodeInternal, "pin %s: %v", skill, err)
	}
	if err := l.Rescan(ctx); err != nil {
		return err
	}
	// A version that is valid on disk can still fail to start. The skill
	// then keeps serving what it served, and a pin left behind would hold
	// back every newer version for one that does not run: undo it.
	st, ok := l.Skill(skill)
	if !ok || st.Disabled || st.Active == version {
		return nil
	}
	why := "it did not become active"
	for _, v := range st.Versions {
		switch {
		case v.Version != version || v.LastError == "":
		case v.State == StateFailed:
			why = "it failed to start: " + v.LastError
		default:
			why = fmt.Sprintf("it is %s: %s", v.State, v.LastError)
		}
	}
	serving := "nothing serves it"
	if st.Active != "" {
		serving = st.Active + " keeps serving"
	}
	if err := l.cfg.State.Update(skill, func(s *Decision) { s.Pin = prev }); err != nil {
		return registry.Errorf(registry.CodeInternal, "cannot pin %s to %s: %s; undoing the pin failed: %v", skill, version, why, err)
	}
	if err := l.Rescan(ctx); err != nil {
		return err
	}
	return registry.Errorf(registry.CodeBadRequest, "cannot pin %s to %s: %s; %s and the pin is as it was", skill, version, why, serving)
}

// Unpin lets the newest valid version serve again.
func (l *Loader) Unpin(ctx context.Context, skill string) error {
	if err := l.knownSkill(skill); err != nil {
		return err
	}
	if err := l.cfg.State.Update(skill, func(s *Decision) { s.Pin = "" }); err != nil {
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
