package loader

import (
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

// scanInstructions scans the tree's Agent Skills and publishes the result. Called under
// scanMu after the binary scan, so the catalog follows the same rescans (watcher, resync,
// SIGHUP, API). A root that cannot be read leaves the catalog as it was; the binary scan
// has already reported it.
func (l *Loader) scanInstructions() {
	found, err := l.instr.cache.Scan(l.cfg.Skills)
	if err != nil {
		return
	}
	if l.instr.catalog.Publish(found) {
		snap := l.instr.catalog.Snapshot()
		l.log.Info("instruction skills published", "serving", snap.Len(), "not_serving", len(snap.Rejected()), "generation", snap.Generation())
	}
}
