package textindex

import (
	"maps"
	"slices"
)

// Param is one parameter of a tool, as the index sees it.
type Param struct{ Name, Description string }

// Doc is one tool to index.
type Doc struct {
	Key              string   // unique id: qualified tool name "skill.tool"
	Skill            string   // skill name, e.g. "calc"
	Name             string   // tool name, e.g. "convert_units"; split into words
	Description      string   // what the tool does
	Tags             []string // free-form labels, any language
	SkillDescription string   // what the skill as a whole does
	Params           []Param  // see ParamsFromSchema
}

// Fields of a document. Each has its own weight and length normalisation.
const (
	fName      = iota // words of the tool name
	fDesc             // tool description
	fTags             // tags
	fSkill            // skill name and description
	fParamName        // parameter names
	fParamDesc        // parameter descriptions and enum values
	fNamePair         // adjacent name-word pairs ("quadrat root")
	numFields
)

// posting says how often a term occurs in each field of one document.
type posting struct {
	doc int32 // slot in Index.docs
	tf  [numFields]uint16
}

// docInfo is what a search needs to know about a document besides its
// postings. It is never mutated once built, so indexes share it.
type docInfo struct {
	key   string
	skill string
	lens  [numFields]float32
	terms []string // distinct terms, to take the document out again
}

// Index is an immutable BM25F index over tool documents.
//
// It is safe for any number of concurrent readers. Replace builds a new
// Index that shares everything it does not change with its receiver, so a
// registry can publish the result behind an atomic.Pointer while old readers
// finish on the old one.
type Index struct {
	docs     []*docInfo           // by slot; nil for a free slot
	free     []int32              // free slots, reused by Replace
	skills   map[string][]int32   // skill → its slots
	terms    map[string][]posting // term → postings; slices are never mutated
	totalLen [numFields]float64   // sum of field lengths over live docs
	n        int                  // live docs
}

// New builds an index over docs, grouped into skills by Doc.Skill.
// Keys should be unique; the index does not check.
func New(docs []Doc) *Index {
	ix := &Index{
		skills: map[string][]int32{},
		terms:  map[string][]posting{},
	}
	b := newBuilder(len(docs))
	for i := range docs {
		b.add(ix, &docs[i], docs[i].Skill)
	}
	for t, ps := range b.postings {
		ix.terms[t] = ps
	}
	return ix
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return ix.n }

// Replace returns a new Index in which skill's documents are exactly docs
// (nil or empty removes the skill). Every doc is filed under skill whatever
// its Skill field says. The receiver is unchanged.
//
// The cost is a shallow copy of the term dictionary and the slot table plus
// work proportional to the postings of the terms the old and new documents
// contain, so it stays a few milliseconds even at 10,000 documents.
func (ix *Index) Replace(skill string, docs []Doc) *Index {
	nx := &Index{
		docs:     slices.Clone(ix.docs),
		free:     slices.Clone(ix.free),
		skills:   maps.Clone(ix.skills),
		terms:    maps.Clone(ix.terms),
		totalLen: ix.totalLen,
		n:        ix.n,
	}
	if nx.skills == nil {
		nx.skills = map[string][]int32{}
	}
	if nx.terms == nil {
		nx.terms = map[string][]posting{}
	}

	// Take the old documents out.
	old := ix.skills[skill]
	removed := make(map[int32]struct{}, len(old))
	affected := map[string]struct{}{}
	for _, slot := range old {
		d := nx.docs[slot]
		for f := range numFields {
			nx.totalLen[f] -= float64(d.lens[f])
		}
		for _, t := range d.terms {
			affected[t] = struct{}{}
		}
		removed[slot] = struct{}{}
		nx.docs[slot] = nil
		nx.n--
	}
	delete(nx.skills, skill)
	// Freed slots go to the end of the free list only after the new docs
	// took theirs, so a slot is never both removed and re-added here.
	freed := old

	b := newBuilder(len(docs))
	for i := range docs {
		b.add(nx, &docs[i], skill)
	}
	nx.free = append(nx.free, freed...)

	for t := range b.postings {
		affected[t] = struct{}{}
	}
	for t := range affected {
		cur := nx.terms[t]
		add := b.postings[t]
		ps := make([]posting, 0, len(cur)+len(add))
		for _, p := range cur {
			if _, gone := removed[p.doc]; !gone {
				ps = append(ps, p)
			}
		}
		ps = append(ps, add...)
		if len(ps) == 0 {
			delete(nx.terms, t)
		} else {
			nx.terms[t] = ps
		}
	}
	return nx
}

// builder accumulates postings for new documents.
type builder struct {
	postings map[string][]posting
	scratch  map[string]*[numFields]uint16
}

func newBuilder(n int) *builder {
	return &builder{
		postings: make(map[string][]posting, n*8),
		scratch:  map[string]*[numFields]uint16{},
	}
}

// add analyses d, gives it a slot in ix and records its postings.
func (b *builder) add(ix *Index, d *Doc, skill string) {
	clear(b.scratch)
	var lens [numFields]float32
	addTerm := func(f int) func(string) {
		return func(t string) {
			tf := b.scratch[t]
			if tf == nil {
				tf = new([numFields]uint16)
				b.scratch[t] = tf
			}
			if tf[f] < 1<<16-1 {
				tf[f]++
			}
			lens[f]++
		}
	}
	forEachTerm(d.Name, addTerm(fName))
	forEachNamePair(d.Name, addTerm(fNamePair))
	forEachTerm(d.Description, addTerm(fDesc))
	for _, tag := range d.Tags {
		forEachTerm(tag, addTerm(fTags))
	}
	forEachTerm(skill, addTerm(fSkill))
	forEachTerm(d.SkillDescription, addTerm(fSkill))
	for _, p := range d.Params {
		forEachTerm(p.Name, addTerm(fParamName))
		forEachTerm(p.Description, addTerm(fParamDesc))
	}

	var slot int32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = int32(len(ix.docs))
		ix.docs = append(ix.docs, nil)
	}
	info := &docInfo{key: d.Key, skill: skill, lens: lens, terms: make([]string, 0, len(b.scratch))}
	for t, tf := range b.scratch {
		info.terms = append(info.terms, t)
		b.postings[t] = append(b.postings[t], posting{doc: slot, tf: *tf})
	}
	slices.Sort(info.terms)
	ix.docs[slot] = info
	ix.skills[skill] = append(ix.skills[skill], slot)
	for f := range numFields {
		ix.totalLen[f] += float64(lens[f])
	}
	ix.n++
}

// forEachNamePair emits the pairs of adjacent terms of a tool name, so that
// a query saying "quadratic roots" prefers "algebra_quadratic_roots" over a
// tool that merely mentions both words.
func forEachNamePair(name string, fn func(string)) {
	var prev string
	forEachTerm(name, func(t string) {
		if prev != "" {
			fn(prev + " " + t)
		}
		prev = t
	})
}
