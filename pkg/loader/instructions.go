package loader

import (
	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// instructions keeps the tree's Agent Skills (SKILL.md folders, in both layouts) as a
// published catalog. Every scan of the tree scans them as well, through a skillmd.Cache so a
// rescan reads only SKILL.md and the files that changed; nothing in their folders is ever
// executed, only read. Its fields are set in New and used under scanMu.
type instructions struct {
	cache   *skillmd.Cache
	catalog *skills.Catalog
}

func newInstructions() instructions {
	return instructions{cache: skillmd.NewCache(), catalog: skills.New()}
}

// Catalog is the tree's Agent Skills as they serve: read its Snapshot, and wait on Changed
// for the next publish. A face reads it; only the loader publishes.
func (l *Loader) Catalog() *skills.Catalog { return l.instr.catalog }

// scanInstructions scans the tree's Agent Skills beside a scan of the binaries (under scanMu,
// so the catalog follows the same rescans: watcher, resync, SIGHUP, API) and ties each tied
// copy to its binary version (JoinTied). A tree that could not be scanned yields nothing; the
// binary scan reports it.
func (l *Loader) scanInstructions(tree *manifest.Tree, scanErr error) []skillmd.Skill {
	if scanErr != nil {
		return nil
	}
	found, err := l.instr.cache.Scan(l.cfg.Skills)
	if err != nil {
		return nil
	}
	if found == nil {
		found = []skillmd.Skill{} // an empty tree is a result: the last skill may have gone
	}
	JoinTied(tree, found)
	return found
}

// JoinTied makes a tied version folder (manifest.json, a binary and SKILL.md) one unit: its
// fingerprint covers the instructions' digest, so an edit to SKILL.md reloads the version as
// an edit to the manifest does, and an invalid or incomplete SKILL.md holds the version back
// with its problems, as a bad manifest would: instructions shipped with a binary are part of
// it, and serving the binary without them would be serving half a version. host validate
// calls it too, so it judges a tied version as the daemon would.
func JoinTied(tree *manifest.Tree, found []skillmd.Skill) {
	byDir := make(map[string]*skillmd.Skill, len(found))
	for i := range found {
		if found[i].Tied {
			byDir[found[i].Dir] = &found[i]
		}
	}
	if len(byDir) == 0 {
		return
	}
	for i := range tree.Versions {
		v := &tree.Versions[i]
		s, ok := byDir[v.Dir]
		if !ok {
			continue
		}
		v.Fingerprint += "+skillmd:" + s.Digest
		if s.Status == skillmd.StatusValid || v.Status == manifest.StatusInvalid {
			continue
		}
		for _, p := range s.Problems.Errors() {
			v.Problems = append(v.Problems, manifest.Problem{Path: p.Where(), Message: p.Message})
		}
		if s.Status == skillmd.StatusInvalid {
			v.Status = manifest.StatusInvalid
		} else {
			v.Status = manifest.StatusIncomplete
		}
	}
}

// publishInstructions publishes a scan's Agent Skills and announces what changed.
func (l *Loader) publishInstructions(found []skillmd.Skill) {
	if found == nil {
		return
	}
	prev := l.instr.catalog.Snapshot()
	if !l.instr.catalog.Publish(found) {
		return
	}
	next := l.instr.catalog.Snapshot()
	for _, e := range instructionEvents(prev, next) {
		l.emit(e)
	}
}

// instructionEvents are the lifecycle events between two catalogs, as a binary skill's
// versions announce theirs, so the event stream, the console and the log follow Agent Skills
// too: a copy that serves (active, PID 0: nothing runs), one that leaves (stopped), and a
// copy found invalid or incomplete (with the reason; what served before keeps serving).
func instructionEvents(prev, next *skills.Snapshot) []Event {
	const why = "Agent Skill (SKILL.md)"
	var out []Event
	for _, e := range next.List() {
		old, had := prev.Get(e.Name())
		if !had || old.Serving.Version != e.Serving.Version || old.Serving.Digest != e.Serving.Digest {
			ev := Event{Skill: e.Name(), Version: e.Serving.Version, State: StateActive, Reason: why}
			if had {
				ev.From = StateStopped
			}
			out = append(out, ev)
		}
		out = append(out, rejectedEvents(e.Found, e.Serving, prev)...)
	}
	for _, e := range prev.List() {
		if _, ok := next.Get(e.Name()); !ok {
			out = append(out, Event{Skill: e.Name(), Version: e.Serving.Version, From: StateActive, State: StateStopped, Reason: why + ": its folder is gone"})
		}
	}
	return append(out, rejectedEvents(next.Rejected(), skillmd.Skill{}, prev)...)
}

// rejectedEvents announce the copies in found that are not valid, once: a copy the previous
// catalog already showed with the same digest and verdict is not announced again.
func rejectedEvents(found []skillmd.Skill, serving skillmd.Skill, prev *skills.Snapshot) []Event {
	var out []Event
	for _, c := range found {
		if c.Status == skillmd.StatusValid || seen(prev, c) {
			continue
		}
		state := StateInvalid
		if c.Status == skillmd.StatusIncomplete {
			state = StateIncomplete
		}
		reason := c.Problems.Errors().Error()
		if serving.Doc != nil {
			reason += "; " + serving.Version + " keeps serving"
		}
		out = append(out, Event{Skill: c.Name, Version: c.Version, State: state, Reason: reason})
	}
	return out
}

// seen reports whether prev already showed copy c with the same digest and verdict.
func seen(prev *skills.Snapshot, c skillmd.Skill) bool {
	var copies []skillmd.Skill
	if e, ok := prev.Get(c.Name); ok {
		copies = e.Found
	} else {
		copies = prev.Rejected()
	}
	for _, o := range copies {
		if o.Name == c.Name && o.Version == c.Version && o.Digest == c.Digest && o.Status == c.Status {
			return true
		}
	}
	return false
}
