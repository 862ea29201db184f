package skills

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/Masterminds/semver/v3"

	"github.com/skillhost/skillhost/pkg/registry/textindex"
	"github.com/skillhost/skillhost/pkg/skillmd"
)

// ErrUnknownSkill is returned for a name the snapshot does not serve.
var ErrUnknownSkill = errors.New("no such instruction skill")

// Entry is one skill as it serves: the copy models are handed (Serving), and every copy the
// last scan found of it, so a listing can show why a newer one does not serve.
type Entry struct {
	// Serving is the version handed to models. Its Doc is never nil and its Status is valid.
	Serving skillmd.Skill
	// Found are the copies the last scan found, newest first, valid or not. A found copy
	// that is not Serving and not valid is why an edit did not take.
	Found []skillmd.Skill
	// Stale is set when no copy the last scan found is valid, so Serving is what served
	// before the folder went bad: its instructions are still handed out, from memory.
	Stale bool
	// Tags are the skill's metadata "tags" (comma or space separated), which a profile's
	// skill_tags bound.
	Tags []string
}

// Name is the skill's name.
func (e *Entry) Name() string { return e.Serving.Name }

// Description is the description a catalog shows (at most 1024 characters).
func (e *Entry) Description() string { return e.Serving.Doc.CatalogDescription() }

// Body is the instructions a model receives on activation.
func (e *Entry) Body() string { return e.Serving.Doc.Body }

// Problems are the problems of every copy found, the serving one's warnings included, each
// message prefixed with the copy's version when it is not the serving one.
func (e *Entry) Problems() skillmd.Problems {
	var out skillmd.Problems
	for _, s := range e.Found {
		for _, p := range s.Problems {
			if s.Version != e.Serving.Version || s.Digest != e.Serving.Digest {
				p.Message = fmt.Sprintf("version %s (%s, not serving): %s", s.Version, s.Status, p.Message)
			}
			out = append(out, p)
		}
	}
	if len(e.Found) == 0 {
		out = append(out, e.Serving.Problems...)
	}
	return out
}

// Snapshot is the catalog at one moment. It is immutable: share it freely.
type Snapshot struct {
	gen     uint64
	entries []*Entry // sorted by name
	byName  map[string]*Entry
	index   *textindex.Index
	// rejected are the copies of skills that have never served: found, but none valid.
	rejected []skillmd.Skill
}

// Rejected returns the copies of skills that have no serving version (none was ever valid),
// sorted by name, so listings can show why they are not offered.
func (s *Snapshot) Rejected() []skillmd.Skill { return slices.Clone(s.rejected) }

// Generation counts publishes that changed something; equal generations are equal catalogs.
func (s *Snapshot) Generation() uint64 { return s.gen }

// List returns the serving skills, sorted by name.
func (s *Snapshot) List() []*Entry { return slices.Clone(s.entries) }

// Len is the number of serving skills.
func (s *Snapshot) Len() int { return len(s.entries) }

// Get returns the named skill.
func (s *Snapshot) Get(name string) (*Entry, bool) {
	e, ok := s.byName[name]
	return e, ok
}

// Hit is one ranked skill.
type Hit struct {
	Entry *Entry
	Score float64
}

// Search ranks the skills whose name and description fit text, best first, at most limit
// (DefaultLimit when <= 0), keeping only those accept lets through (nil: all). Text without
// words the index knows finds nothing, as the tool prefilter does.
func (s *Snapshot) Search(text string, limit int, accept func(*Entry) bool) []Hit {
	if limit <= 0 {
		limit = textindex.DefaultLimit
	}
	hits := s.index.Search(textindex.Query{Text: text, Limit: limit, Accept: func(h textindex.Hit) bool {
		return accept == nil || accept(h.Ref.(*Entry))
	}})
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{Entry: h.Ref.(*Entry), Score: h.Score}
	}
	return out
}

// ReadFile reads a file of the named skill's serving copy, with skillmd's checks and caps.
// Errors wrap ErrUnknownSkill, skillmd.ErrBadPath, skillmd.ErrNotServed or
// skillmd.ErrChanged.
func (s *Snapshot) ReadFile(name, path string) ([]byte, error) {
	e, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("skill %q: %w", name, ErrUnknownSkill)
	}
	return e.Serving.ReadFile(path)
}

// Catalog publishes snapshots. Readers call Snapshot and Changed; the loader calls Publish.
// The zero value is not usable; use New.
type Catalog struct {
	cur atomic.Pointer[Snapshot]

	mu      sync.Mutex    // serializes Publish and guards changed
	changed chan struct{} // closed at the next publish that changes the catalog
}

// New returns an empty catalog.
func New() *Catalog {
	c := &Catalog{changed: make(chan struct{})}
	c.cur.Store(build(0, nil))
	return c
}

// Snapshot returns the current catalog.
func (c *Catalog) Snapshot() *Snapshot { return c.cur.Load() }

// Changed returns a channel that is closed when the catalog next changes; call it again
// afterwards for the change after that. A subscriber reads Snapshot after the close.
func (c *Catalog) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Publish replaces the catalog with what a scan found (every copy, valid or not, as
// skillmd.Scan returns them) and reports whether anything changed. For each skill name the
// newest valid copy serves; when none is valid, what served before keeps serving (Stale); a
// name the scan did not find at all leaves the catalog.
func (c *Catalog) Publish(found []skillmd.Skill) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.cur.Load()
	byName := map[string][]skillmd.Skill{}
	for _, s := range found {
		byName[s.Name] = append(byName[s.Name], s)
	}
	var entries []*Entry
	var rejected []skillmd.Skill
	for name, copies := range byName {
		sort.SliceStable(copies, func(i, j int) bool { return newer(copies[i].Version, copies[j].Version) })
		e := &Entry{Found: copies}
		for _, s := range copies {
			if s.Status == skillmd.StatusValid && s.Doc != nil {
				e.Serving = s
				break
			}
		}
		if e.Serving.Doc == nil {
			old, ok := prev.byName[name]
			if !ok {
				rejected = append(rejected, copies...) // never served: shown, not offered
				continue
			}
			e.Serving, e.Stale = old.Serving, true
		}
		e.Tags = tagsOf(e.Serving)
		entries = append(entries, e)
	}
	if same(prev, entries) && sameCopies(prev.rejected, rejected) {
		return false
	}
	sort.SliceStable(rejected, func(i, j int) bool { return rejected[i].Name < rejected[j].Name })
	next := build(prev.gen+1, entries)
	next.rejected = rejected
	c.cur.Store(next)
	close(c.changed)
	c.changed = make(chan struct{})
	return true
}

// same reports whether entries serve and show exactly what prev does.
func same(prev *Snapshot, entries []*Entry) bool {
	if len(entries) != len(prev.entries) {
		return false
	}
	for _, e := range entries {
		o, ok := prev.byName[e.Name()]
		if !ok || o.Stale != e.Stale || o.Serving.Digest != e.Serving.Digest || o.Serving.Version != e.Serving.Version ||
			o.Serving.Dir != e.Serving.Dir {
			return false
		}
		if !sameCopies(o.Found, e.Found) {
			return false
		}
	}
	return true
}

// sameCopies compares two lists of found copies by what a listing shows of them.
func sameCopies(a, b []skillmd.Skill) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(s skillmd.Skill) string {
		return s.Name + "\x00" + s.Version + "\x00" + s.Digest + "\x00" + string(s.Status) + "\x00" + s.Problems.Error()
	}
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i], bs[i] = key(a[i]), key(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

func build(gen uint64, entries []*Entry) *Snapshot {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	s := &Snapshot{gen: gen, entries: entries, byName: make(map[string]*Entry, len(entries))}
	docs := make([]textindex.Doc, 0, len(entries))
	for _, e := range entries {
		s.byName[e.Name()] = e
		docs = append(docs, textindex.Doc{
			Key: e.Name(), Skill: e.Name(), Name: strings.ReplaceAll(e.Name(), "-", "_"),
			Description: e.Description(), Tags: e.Tags, Ref: e,
		})
	}
	s.index = textindex.New(docs)
	return s
}

// newer orders versions newest first: semver precedence, then text, so the order is total.
func newer(a, b string) bool {
	va, ea := semver.StrictNewVersion(a)
	vb, eb := semver.StrictNewVersion(b)
	if ea == nil && eb == nil {
		if c := va.Compare(vb); c != 0 {
			return c > 0
		}
	}
	return a > b
}

// tagsOf reads metadata.tags, the one place the specification leaves for labels.
func tagsOf(s skillmd.Skill) []string {
	raw := s.Doc.Metadata["tags"]
	return strings.FieldsFunc(strings.ToLower(raw), func(r rune) bool { return r == ',' || r == ' ' })
}
