package textindex

import (
	"math"
	"slices"
	"sync"
)

// Query is one prefilter request.
type Query struct {
	Text   string
	Limit  int            // <=0 means DefaultLimit
	Accept func(Hit) bool // nil accepts all; called only for candidates that would make the cut
}

// Hit is one scored document.
type Hit struct {
	Key   string
	Score float64
	Ref   any // the document's Doc.Ref
}

// DefaultLimit is the number of hits Search returns when Query.Limit <= 0.
const DefaultLimit = 5

// scoring holds the ranking parameters. They were tuned on BFCL; see
// TUNING.md for what each one bought.
type scoring struct {
	weight [numFields]float64 // BM25F field weights
	b      [numFields]float64 // per-field length normalisation
	k1     float64
	pairs  bool // match adjacent query-term pairs against name-word pairs
	// cover multiplies a score by 1+cover*c, c being the share of the
	// document's name words that the query contains.
	cover float64
	// k3 saturates a term repeated in the query (qtf·(k3+1)/(qtf+k3), as in
	// Robertson's BM25), so a long pasted prompt that says "memory" ten
	// times does not outweigh the request at its end. 0 turns it off.
	k3 float64
	// abbrev is the weight of the longest proper prefix (at least
	// abbrevMin bytes) of a query term that is itself an index term, so
	// "calculate" also meets "calc", "information" "info" and
	// "probability" "prob": tool names abbreviate. 0 turns it off.
	abbrev    float64
	abbrevMin int
}

var defaultScoring = scoring{
	//        name desc tags skill pname pdesc pair
	weight:    [numFields]float64{6, 2, 2, 0.5, 1.5, 1, 1},
	b:         [numFields]float64{0.25, 0.9, 0.75, 0.75, 0.75, 0.25, 0.75},
	k1:        1.6,
	pairs:     true,
	cover:     0.3,
	k3:        0.5,
	abbrev:    0.3,
	abbrevMin: 4,
}

// cfg is the scoring in force; tests swap it while tuning.
var cfg = defaultScoring

// accum is a dense score accumulator reused across searches.
type accum struct {
	score   []float64
	named   []uint16 // name-word occurrences that match a query term
	touched []int32
}

var accumPool = sync.Pool{New: func() any { return new(accum) }}

// queryTerm is one distinct term of a query with its weight.
type queryTerm struct {
	term   string
	qtf    float64
	pair   bool // two adjacent words, matched against name pairs
	abbrev bool // a prefix of a query word (see scoring.abbrev)
}

// withAbbreviations appends, for each query word, its longest proper prefix
// that the index holds as a term, weighted by cfg.abbrev. Only the index's
// own vocabulary is consulted, so nothing is guessed: "calcul" adds "calc"
// only where some tool says "calc".
func (ix *Index) withAbbreviations(qts []queryTerm) []queryTerm {
	if cfg.abbrev == 0 {
		return qts
	}
	n := len(qts)
	for i := range n {
		t := qts[i].term
		if qts[i].pair || !isASCIIWord(t) {
			continue
		}
		for k := len(t) - 1; k >= cfg.abbrevMin; k-- {
			p := t[:k]
			if ix.postings(p).df == 0 {
				continue
			}
			if !slices.ContainsFunc(qts, func(q queryTerm) bool { return q.term == p }) {
				qts = append(qts, queryTerm{term: p, qtf: cfg.abbrev * qts[i].qtf, abbrev: true})
			}
			break
		}
	}
	return qts
}

// isASCIIWord reports whether t is lowercase ASCII letters only: the terms
// whose prefixes can be abbreviations.
func isASCIIWord(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return false
		}
	}
	return true
}

// Search returns the best-scoring documents for q, best first; equal scores
// are ordered by Key. A query with no index terms returns no hits.
func (ix *Index) Search(q Query) []Hit {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	qts := ix.withAbbreviations(queryTerms(q.Text))
	if len(qts) == 0 || ix.n == 0 {
		return nil
	}

	sc := &cfg
	n := float64(ix.n)
	var norm [numFields]float64 // b/avglen per field
	for f := range numFields {
		if ix.totalLen[f] > 0 {
			norm[f] = sc.b[f] * n / ix.totalLen[f]
		}
	}

	acc := accumPool.Get().(*accum)
	if len(acc.score) < len(ix.docs) {
		acc.score = make([]float64, len(ix.docs))
		acc.named = make([]uint16, len(ix.docs))
	}
	named := acc.named
	score := acc.score
	touched := acc.touched[:0]
	k1 := sc.k1

	for _, qt := range qts {
		pl := ix.postings(qt.term)
		if pl.df == 0 {
			continue
		}
		df := float64(pl.df)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		qtf := qt.qtf
		if sc.k3 > 0 {
			qtf = qtf * (sc.k3 + 1) / (qtf + sc.k3)
		}
		w := idf * qtf * (k1 + 1)
		for _, b := range pl.blocks {
			for i := range b {
				p := &b[i]
				d := ix.docs[p.doc]
				var tfw float64
				for f := range numFields {
					if tf := p.tf[f]; tf != 0 {
						tfw += sc.weight[f] * float64(tf) / (1 - sc.b[f] + norm[f]*float64(d.lens[f]))
					}
				}
				if tfw == 0 {
					continue
				}
				if score[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				score[p.doc] += w * tfw / (tfw + k1)
				if p.tf[fName] != 0 && !qt.abbrev {
					named[p.doc] += p.tf[fName]
				}
			}
		}
	}

	if sc.cover != 0 {
		for _, d := range touched {
			if nl := ix.docs[d].lens[fName]; nl > 0 && named[d] > 0 {
				score[d] *= 1 + sc.cover*min(1, float64(named[d])/float64(nl))
			}
		}
	}
	hits := topK(ix, score, touched, limit, q.Accept)
	for _, d := range touched {
		score[d] = 0
		named[d] = 0
	}
	acc.touched = touched
	accumPool.Put(acc)
	return hits
}

// queryTerms analyses query text into distinct weighted terms.
func queryTerms(text string) []queryTerm {
	var qts []queryTerm
	var prev string
	add := func(t string, pair bool) {
		for i := range qts {
			if qts[i].term == t {
				qts[i].qtf++
				return
			}
		}
		qts = append(qts, queryTerm{term: t, qtf: 1, pair: pair})
	}
	forEachTerm(text, func(t string) {
		add(t, false)
		if cfg.pairs && prev != "" {
			add(prev+" "+t, true)
		}
		prev = t
	})
	return qts
}

// better reports whether hit a ranks before hit b.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Key < b.Key
}

// topK selects the limit best accepted documents among the touched ones.
// Accept is called only for a candidate that would enter the current top
// list, so a selective filter costs few calls.
func topK(ix *Index, score []float64, touched []int32, limit int, accept func(Hit) bool) []Hit {
	if limit > maxInsertionLimit {
		return topKSort(ix, score, touched, limit, accept)
	}
	hits := make([]Hit, 0, min(limit, len(touched)))
	for _, d := range touched {
		// Most candidates lose on score alone: decide those without
		// reading their document record, a cache miss each.
		if len(hits) == limit && score[d] < hits[len(hits)-1].Score {
			continue
		}
		info := ix.docs[d]
		h := Hit{Key: info.key, Score: score[d], Ref: info.ref}
		if len(hits) == limit && !better(h, hits[len(hits)-1]) {
			continue
		}
		if accept != nil && !accept(h) {
			continue
		}
		// Insertion into a short sorted list: limit is a handful.
		if len(hits) < limit {
			hits = append(hits, h)
		} else {
			hits[len(hits)-1] = h
		}
		for i := len(hits) - 1; i > 0 && better(hits[i], hits[i-1]); i-- {
			hits[i], hits[i-1] = hits[i-1], hits[i]
		}
	}
	return hits
}

// maxInsertionLimit is the largest limit topK serves with insertion into a
// sorted list; past it, sorting all candidates is cheaper.
const maxInsertionLimit = 64

// topKSort is topK for large limits: it filters, sorts and truncates.
func topKSort(ix *Index, score []float64, touched []int32, limit int, accept func(Hit) bool) []Hit {
	hits := make([]Hit, 0, len(touched))
	for _, d := range touched {
		info := ix.docs[d]
		if h := (Hit{Key: info.key, Score: score[d], Ref: info.ref}); accept == nil || accept(h) {
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	if len(hits) > limit {
		hits = hits[:limit:limit]
	}
	return hits
}
