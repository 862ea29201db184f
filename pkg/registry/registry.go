package registry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// skillEntry is one serving skill version. Its fields are immutable after
// publication except available (flipped by crash and restart) and the
// in-flight counter.
type skillEntry struct {
	name, version, description string
	tags                       []string
	limits                     Limits
	backend                    Backend
	tools                      []*Tool
	byName                     map[string]*Tool // tools by their name within the skill; set before publication

	available atomic.Bool // false while the instance restarts after a crash
	inflight  *counter
}

type counter struct{ n atomic.Int64 }

// tryAdd takes one of max slots, or fails without waiting.
func (c *counter) tryAdd(max int) bool {
	for {
		v := c.n.Load()
		if v >= int64(max) {
			return false
		}
		if c.n.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// Snapshot is one immutable view of every registered tool. Hold on to it for
// the length of one request so that a request sees one consistent tool set.
type Snapshot struct {
	gen    uint64
	skills map[string]*skillEntry // tools are found through their skill (see Tool)
	sorted []*Tool                // by qualified name, for stable listings
	absent map[string]string
	index  *searchIndex
	rerank Reranker
}

// Gen increases with every published change.
func (s *Snapshot) Gen() uint64 { return s.gen }

// Tools returns every tool, available or not, sorted by name.
func (s *Snapshot) Tools() []*Tool { return s.sorted }

// Len is the number of registered tools.
func (s *Snapshot) Len() int { return len(s.sorted) }

// Tool looks a tool up by "skill.tool" or "skill__tool". Tools are found
// through their skill's own map, so that a publish copies the map of
// skills, not one of every tool.
func (s *Snapshot) Tool(name string) (*Tool, bool) {
	skill, tool, ok := strings.Cut(name, ".")
	if !ok {
		if skill, tool, ok = strings.Cut(name, "__"); !ok {
			return nil, false
		}
	}
	e, ok := s.skills[skill]
	if !ok {
		return nil, false
	}
	t, ok := e.byName[tool]
	return t, ok
}

// Lookup is Tool with the reason when the tool is not found: an
// unknown_tool *Error that says whether the skill is disabled, removed or
// has no such tool.
func (s *Snapshot) Lookup(name string) (*Tool, error) {
	if t, ok := s.Tool(name); ok {
		return t, nil
	}
	return nil, Errorf(CodeUnknownTool, "unknown tool %q: %s", name, s.absentReason(name)).With("tool", name)
}

// SkillVersion returns the version serving skill, if any.
func (s *Snapshot) SkillVersion(skill string) (string, bool) {
	e, ok := s.skills[skill]
	if !ok {
		return "", false
	}
	return e.version, true
}

// Change describes one published change, for events, metrics and MCP
// list_changed notifications.
type Change struct {
	Gen     uint64 `json:"gen"`
	Kind    string `json:"kind"` // "put", "remove", "available", "unavailable"
	Skill   string `json:"skill"`
	Version string `json:"version,omitempty"`
	Tools   int    `json:"tools"` // total tools registered after the change
	Reason  string `json:"reason,omitempty"`
}

// Config configures a Registry. The zero value is usable.
type Config struct {
	// OnChange is called after each published change, in publication order,
	// while the writer lock is held: it must not block or call back into
	// the registry's writers.
	OnChange func(Change)
	// OnCall is called after every Invoke with the tool's name, the error
	// code ("" on success) and the duration, for metrics. It must be cheap.
	OnCall func(tool string, code Code, d time.Duration)
	// OnNested is called after every call made from inside another (a
	// skill calling a tool through the host), after OnCall, with the ids
	// that tie it to its parent, for logs, events and metrics. It must be
	// cheap.
	OnNested func(NestedCall)
	// MaxCallDepth bounds how many tools one chain of nested calls may
	// hold; zero means DefaultMaxCallDepth.
	MaxCallDepth int
	// Rerank, when set, reorders the best text hits of every search.
	Rerank Reranker
}

// Registry holds the current snapshot. Reads are lock-free; writes are
// serialized by writeMu.
type Registry struct {
	cfg     Config
	cur     atomic.Pointer[Snapshot]
	writeMu sync.Mutex // guards publication: one writer builds the next snapshot at a time

	// changed is closed and replaced on every publication, so a caller
	// whose lease failed can wait for the next snapshot.
	changed atomic.Pointer[chan struct{}]

	ids *callIDs // numbers every call, for CallID
}

// New returns an empty registry.
func New(cfg Config) *Registry {
	r := &Registry{cfg: cfg, ids: newCallIDs()}
	ch := make(chan struct{})
	r.changed.Store(&ch)
	r.cur.Store(&Snapshot{
		skills: map[string]*skillEntry{},
		absent: map[string]string{}, index: newSearchIndex(), rerank: cfg.Rerank,
	})
	return r
}

// Snapshot returns the current snapshot.
func (r *Registry) Snapshot() *Snapshot { return r.cur.Load() }

// Validate checks and compiles a spec without publishing it. The loader calls
// it to fail a new version before it replaces the serving one.
func Validate(spec SkillSpec) error {
	_, err := compileSkill(spec, nil)
	return err
}

// Put publishes spec as the serving version of its skill, replacing any
// previous version atomically. It returns the backend it replaced (nil if
// none), which the caller then drains. Put validates first: on error nothing
// changes.
func (r *Registry) Put(spec SkillSpec) (old Backend, err error) {
	// The serving version's compiled schemas, read without the writer's
	// lock: a concurrent Put only makes the reuse miss, as reuse is keyed
	// on the schema's exact bytes.
	e, err := compileSkill(spec, r.cur.Load().skills[spec.Name])
	if err != nil {
		return nil, err
	}
	e.available.Store(true)
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	cur := r.cur.Load()
	if prev, ok := cur.skills[spec.Name]; ok {
		old = prev.backend
	}
	next := cur.with(spec.Name, e, "")
	r.publish(next, Change{Kind: "put", Skill: spec.Name, Version: spec.Version})
	return old, nil
}

// Remove takes a skill's tools out of the registry and returns its backend
// (nil if it had none). reason is kept so that a call to one of its tools is
// told why it is gone ("disabled by an operator", "no valid version left").
func (r *Registry) Remove(skill, reason string) Backend {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	cur := r.cur.Load()
	prev, ok := cur.skills[skill]
	if !ok {
		if cur.absent[skill] != reason {
			r.publish(cur.with(skill, nil, reason), Change{Kind: "remove", Skill: skill, Reason: reason})
		}
		return nil
	}
	r.publish(cur.with(skill, nil, reason), Change{Kind: "remove", Skill: skill, Version: prev.version, Reason: reason})
	return prev.backend
}

// SetAvailable marks a serving skill's tools available or not (a crash makes
// them unavailable at once: calls fail fast with a retryable error, and
// search stops offering them). backend names the instance the caller means,
// so that a late report about a replaced instance changes nothing.
func (r *Registry) SetAvailable(skill string, backend Backend, available bool, reason string) {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	cur := r.cur.Load()
	e, ok := cur.skills[skill]
	if !ok || e.backend != backend || e.available.Load() == available {
		return
	}
	e.available.Store(available)
	kind := "available"
	if !available {
		kind = "unavailable"
	}
	// A new generation tells watchers that what search offers has changed.
	next := *cur
	next.gen = cur.gen + 1
	r.publish(&next, Change{Kind: kind, Skill: skill, Version: e.version, Reason: reason})
}

// publish stores next and announces it. writeMu must be held.
func (r *Registry) publish(next *Snapshot, c Change) {
	if next.gen == r.cur.Load().gen {
		next.gen++
	}
	r.cur.Store(next)
	ch := make(chan struct{})
	close(*r.changed.Swap(&ch))
	if r.cfg.OnChange != nil {
		c.Gen = next.gen
		c.Tools = len(next.sorted)
		r.cfg.OnChange(c)
	}
}

// Changed returns a channel that is closed at the next publication.
func (r *Registry) Changed() <-chan struct{} { return *r.changed.Load() }

// with returns a copy of s in which skill is served by e (nil removes it,
// remembering reason). It costs the skill's own tools plus a copy of the
// skill map and of the sorted pointer list: nothing per tool of the other
// skills, so a publish stays cheap at 10,000 tools.
func (s *Snapshot) with(skill string, e *skillEntry, reason string) *Snapshot {
	next := &Snapshot{
		gen:    s.gen + 1,
		skills: maps.Clone(s.skills),
		absent: maps.Clone(s.absent),
		rerank: s.rerank,
	}
	delete(next.skills, skill)
	delete(next.absent, skill)
	var tools []*Tool
	if e != nil {
		tools = e.tools
		e.byName = make(map[string]*Tool, len(tools))
		for _, t := range tools {
			e.byName[t.local] = t
		}
		next.skills[skill] = e
	} else if reason != "" {
		next.absent[skill] = reason
	}
	// A skill's tools are one run of the sorted list (they share the prefix
	// "skill."): cut the old run out and put the new one in its place.
	lo, _ := slices.BinarySearchFunc(s.sorted, skill+".", func(t *Tool, k string) int { return strings.Compare(t.Name, k) })
	hi, _ := slices.BinarySearchFunc(s.sorted, skill+"/", func(t *Tool, k string) int { return strings.Compare(t.Name, k) })
	added := slices.SortedFunc(slices.Values(tools), func(a, b *Tool) int { return strings.Compare(a.Name, b.Name) })
	next.sorted = slices.Concat(s.sorted[:lo], added, s.sorted[hi:])
	next.index = s.index.replace(skill, tools, e)
	return next
}

// absentReason explains why a tool of skill is not found.
func (s *Snapshot) absentReason(name string) string {
	skill, _, err := SplitName(name)
	if err != nil {
		return err.Error()
	}
	if why, ok := s.absent[skill]; ok {
		return fmt.Sprintf("skill %s is not serving: %s", skill, why)
	}
	if _, ok := s.skills[skill]; ok {
		return fmt.Sprintf("skill %s has no such tool", skill)
	}
	return fmt.Sprintf("no skill named %s", skill)
}
