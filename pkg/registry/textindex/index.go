package textindex

import (
	"hash/maphash"
	"maps"
	"math"
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
	// Ref is the caller's own handle on the document (the registry's
	// *Tool), handed back in its hits so that no lookup by Key is needed.
	Ref any
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
	ref   any
	lens  [numFields]float32
}

// segment is one skill's documents: their slots and every term they
// contain, so that Replace can take the skill out again by visiting only
// those terms. Immutable once built.
type segment struct {
	slots []int32  // sorted
	terms []string // distinct, sorted
}

// postingList is a term's postings, sorted by slot and cut into blocks of
// about blockSize. Replace rebuilds only the blocks that hold a removed or
// added document and shares the others, so a change costs a block, not the
// list; Search still reads postings from contiguous arrays. Immutable once
// published.
type postingList struct {
	df     int32       // documents containing the term
	blocks [][]posting // each non-empty and sorted by slot; blocks in slot order
}

// blockSize is the size Replace cuts a grown block to; a block is split
// when it passes twice that.
const blockSize = 64

// termShards is the term dictionary, split by a hash of the term so that
// Replace copies the few small shards its terms fall in, not a map of the
// whole vocabulary. A nil shard is empty.
type termShards [numShards]map[string]postingList

// numShards is the number of term-dictionary shards. At 10,000 tools the
// vocabulary is some 15,000 terms and a 20-tool skill touches about 600 of
// them: with 4,096 shards Replace clones some 500 maps of a few entries.
const numShards = 4096

var shardSeed = maphash.MakeSeed()

func shardOf(term string) int { return int(maphash.String(shardSeed, term) % numShards) }

// Index is an immutable BM25F index over tool documents.
//
// It is safe for any number of concurrent readers. Replace builds a new
// Index that shares everything it does not change with its receiver, so a
// registry can publish the result behind an atomic.Pointer while old readers
// finish on the old one.
type Index struct {
	docs     []*docInfo          // by slot; nil for a free slot
	free     []int32             // free slots, reused by Replace
	skills   map[string]*segment // skill → its documents
	terms    *termShards         // nil when empty; shards and lists are never mutated once published
	totalLen [numFields]float64  // sum of field lengths over live docs
	n        int                 // live docs
}

// postings returns term's posting list (zero when absent).
func (ix *Index) postings(term string) postingList {
	if ix.terms == nil {
		return postingList{}
	}
	return ix.terms[shardOf(term)][term]
}

// New builds an index over docs, grouped into skills by Doc.Skill.
// Keys should be unique; the index does not check.
func New(docs []Doc) *Index {
	ix := &Index{skills: map[string]*segment{}, terms: new(termShards)}
	bySkill := map[string][]int32{}                // skill → slots, in order (so sorted)
	skillTerms := map[string]map[string]struct{}{} // skill → its distinct terms
	flat := map[string][]posting{}                 // term → postings in slot order
	scratch := map[string]*[numFields]uint16{}
	for i := range docs {
		skill := docs[i].Skill
		slot := ix.place(&docs[i], skill, scratch)
		bySkill[skill] = append(bySkill[skill], slot)
		terms := skillTerms[skill]
		if terms == nil {
			terms = map[string]struct{}{}
			skillTerms[skill] = terms
		}
		for t, tf := range scratch {
			flat[t] = append(flat[t], posting{doc: slot, tf: *tf})
			terms[t] = struct{}{}
		}
	}
	for t, ps := range flat {
		shard := &ix.terms[shardOf(t)]
		if *shard == nil {
			*shard = map[string]postingList{}
		}
		(*shard)[t] = postingList{df: int32(len(ps)), blocks: cut(ps, nil)}
	}
	for skill, slots := range bySkill {
		ix.skills[skill] = &segment{slots: slots, terms: slices.Sorted(maps.Keys(skillTerms[skill]))}
	}
	return ix
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return ix.n }

// Replace returns a new Index in which skill's documents are exactly docs
// (nil or empty removes the skill). Every doc is filed under skill whatever
// its Skill field says. The receiver is unchanged.
//
// The cost is proportional to the old and new documents' terms: per term,
// one shard of the dictionary (a few entries), the block headers of its
// posting list and the one or two blocks that change are copied. Copying
// the slot table and the skill map are the only parts that grow with the
// index, by a pointer per document and per skill.
func (ix *Index) Replace(skill string, docs []Doc) *Index {
	nx := &Index{
		docs:     slices.Clone(ix.docs),
		free:     slices.Clone(ix.free),
		skills:   maps.Clone(ix.skills),
		totalLen: ix.totalLen,
		n:        ix.n,
	}
	if nx.skills == nil {
		nx.skills = map[string]*segment{}
	}
	if ix.terms != nil {
		shards := *ix.terms
		nx.terms = &shards
	} else {
		nx.terms = new(termShards)
	}
	owned := make([]bool, numShards) // shards nx already copied

	// Take the old documents out of the slot table and the statistics.
	old := ix.skills[skill]
	var removed []int32
	if old != nil {
		removed = old.slots
		for _, slot := range removed {
			d := nx.docs[slot]
			for f := range numFields {
				nx.totalLen[f] -= float64(d.lens[f])
			}
			nx.docs[slot] = nil
			nx.n--
		}
		delete(nx.skills, skill)
	}

	// Place the new ones.
	added := map[string][]posting{}
	if len(docs) > 0 {
		seg := &segment{slots: make([]int32, 0, len(docs))}
		scratch := map[string]*[numFields]uint16{}
		for i := range docs {
			slot := nx.place(&docs[i], skill, scratch)
			seg.slots = append(seg.slots, slot)
			for t, tf := range scratch {
				added[t] = append(added[t], posting{doc: slot, tf: *tf})
			}
		}
		slices.Sort(seg.slots)
		seg.terms = slices.Sorted(maps.Keys(added))
		nx.skills[skill] = seg
	}
	// Freed slots go to the free list only after the new docs took theirs,
	// so a slot is never both removed and re-added by one Replace.
	nx.free = append(nx.free, removed...)

	// Edit the posting list of every term the old or new documents have.
	edit := func(t string) {
		i := shardOf(t)
		shard := nx.terms[i]
		add := added[t]
		slices.SortFunc(add, func(a, b posting) int { return int(a.doc - b.doc) })
		pl := shard[t].edit(removed, add)
		if !owned[i] {
			shard = maps.Clone(shard)
			if shard == nil {
				shard = map[string]postingList{}
			}
			nx.terms[i] = shard
			owned[i] = true
		}
		if pl.df == 0 {
			delete(shard, t)
		} else {
			shard[t] = pl
		}
	}
	var oldTerms []string
	if old != nil {
		oldTerms = old.terms
	}
	for _, t := range oldTerms {
		edit(t)
	}
	for t := range added {
		if _, done := slices.BinarySearch(oldTerms, t); !done {
			edit(t)
		}
	}
	return nx
}

// edit returns pl without the documents in removed (sorted slots, which pl
// may or may not hold) and with add (sorted by slot) merged in. Blocks that
// neither touches are shared with pl.
func (pl postingList) edit(removed []int32, add []posting) postingList {
	if len(pl.blocks) == 0 {
		return postingList{df: int32(len(add)), blocks: cut(add, nil)}
	}
	out := postingList{blocks: make([][]posting, 0, len(pl.blocks)+1)}
	for bi, b := range pl.blocks {
		// This block's territory runs up to the next block's first slot;
		// the first block's also covers every slot below its own.
		end := int32(math.MaxInt32)
		if bi+1 < len(pl.blocks) {
			end = pl.blocks[bi+1][0].doc
		}
		nr := 0
		for nr < len(removed) && removed[nr] < end {
			nr++
		}
		na := 0
		for na < len(add) && add[na].doc < end {
			na++
		}
		rm, ad := removed[:nr], add[:na]
		removed, add = removed[nr:], add[na:]
		if na == 0 && (nr == 0 || !holdsAny(b, rm)) {
			out.blocks = append(out.blocks, b)
			out.df += int32(len(b))
			continue
		}
		merged := make([]posting, 0, len(b)+na)
		for _, p := range b {
			for len(ad) > 0 && ad[0].doc < p.doc {
				merged = append(merged, ad[0])
				ad = ad[1:]
			}
			if _, gone := slices.BinarySearch(rm, p.doc); !gone {
				merged = append(merged, p)
			}
		}
		merged = append(merged, ad...)
		out.df += int32(len(merged))
		out.blocks = cut(merged, out.blocks)
	}
	return out
}

// holdsAny reports whether block b (sorted) holds any of the sorted slots.
func holdsAny(b []posting, slots []int32) bool {
	for _, s := range slots {
		if _, ok := slices.BinarySearchFunc(b, s, func(p posting, s int32) int { return int(p.doc - s) }); ok {
			return true
		}
	}
	return false
}

// cut appends ps to blocks, split into blocks of blockSize when it is
// longer than twice that; an empty ps adds nothing.
func cut(ps []posting, blocks [][]posting) [][]posting {
	for len(ps) > 2*blockSize {
		blocks = append(blocks, ps[:blockSize:blockSize])
		ps = ps[blockSize:]
	}
	if len(ps) > 0 {
		blocks = append(blocks, ps[:len(ps):len(ps)])
	}
	return blocks
}

// place analyses d, gives it a slot in ix (a free one first) and its
// docInfo, counts it in the statistics, and leaves its terms' field
// frequencies in scratch.
func (ix *Index) place(d *Doc, skill string, scratch map[string]*[numFields]uint16) int32 {
	clear(scratch)
	var lens [numFields]float32
	addTerm := func(f int) func(string) {
		return func(t string) {
			tf := scratch[t]
			if tf == nil {
				tf = new([numFields]uint16)
				scratch[t] = tf
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
	ix.docs[slot] = &docInfo{key: d.Key, skill: skill, ref: d.Ref, lens: lens}
	for f := range numFields {
		ix.totalLen[f] += float64(lens[f])
	}
	ix.n++
	return slot
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
