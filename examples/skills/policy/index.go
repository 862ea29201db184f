package main

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"
)

// The index scores clauses with BM25 over mixed Chinese and English text.
// Chinese has no spaces, so Han text is indexed as overlapping character
// bigrams (报销标准 → 报销 销标 标准) plus single characters; English is
// indexed as lowercased words without stopwords and with plurals folded.
// Queries use bigrams only (single characters only for a one-character
// run), so 报销标准 matches clauses containing the phrase or its parts,
// and stray single characters do not drown the ranking.

const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// phraseBoost multiplies the score of a clause that contains the whole
	// query verbatim (after lowercasing), so exact phrases rank first.
	phraseBoost = 1.5
)

type entry struct {
	doc    *Document
	clause *Clause
	tf     map[string]int
	length int
	plain  string // lowercased heading + text, for the phrase check
}

// Index is an immutable search index over a corpus; safe for concurrent use.
type Index struct {
	docs    []*Document
	byID    map[string]*Document
	entries []entry
	df      map[string]int
	avgLen  float64
}

// NewIndex indexes every clause of docs. Each clause is indexed with its
// heading twice (headings say what a clause is about) and its document's
// titles once (so 差旅报销 finds the travel policy's clauses).
func NewIndex(docs []*Document) *Index {
	ix := &Index{docs: docs, byID: map[string]*Document{}, df: map[string]int{}}
	total := 0
	for _, d := range docs {
		ix.byID[d.ID] = d
		for ci := range d.Clauses {
			c := &d.Clauses[ci]
			var toks []string
			toks = append(toks, indexTokens(d.Title)...)
			if d.TitleEn != d.Title {
				toks = append(toks, indexTokens(d.TitleEn)...)
			}
			h := indexTokens(c.Heading)
			toks = append(toks, h...)
			toks = append(toks, h...)
			toks = append(toks, indexTokens(c.Text)...)
			e := entry{doc: d, clause: c, tf: map[string]int{}, length: len(toks),
				plain: strings.ToLower(c.Heading + "\n" + c.Text)}
			for _, t := range toks {
				e.tf[t]++
			}
			for t := range e.tf {
				ix.df[t]++
			}
			total += len(toks)
			ix.entries = append(ix.entries, e)
		}
	}
	if n := len(ix.entries); n > 0 {
		ix.avgLen = float64(total) / float64(n)
	}
	return ix
}

// Hit is a scored clause.
type Hit struct {
	Doc    *Document
	Clause *Clause
	Score  float64
}

// Search returns the clauses matching query, best first, restricted to the
// document docID when it is not empty, and the number of matches in all.
// When no clause contains any of the query's bigrams (年假 against text that
// says 年休假), it falls back to single characters, which finds near misses
// at the cost of precision.
func (ix *Index) Search(ctx context.Context, query, docID string, limit int) ([]Hit, int, error) {
	phrase := strings.ToLower(strings.TrimSpace(query))
	hits, err := ix.score(ctx, queryTokens(query), phrase, docID)
	if err == nil && len(hits) == 0 {
		hits, err = ix.score(ctx, fallbackTokens(query), phrase, docID)
	}
	if err != nil {
		return nil, 0, err
	}
	// Stable: equal scores keep corpus order (document id, then clause order).
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	total := len(hits)
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, total, nil
}

// score returns every clause with a positive BM25 score for terms.
func (ix *Index) score(ctx context.Context, terms []string, phrase, docID string) ([]Hit, error) {
	// Each distinct term counts once: repeating a word must not outweigh the others.
	uniq := map[string]bool{}
	for _, t := range terms {
		uniq[t] = true
	}
	if len(uniq) == 0 {
		return nil, nil
	}
	n := float64(len(ix.entries))
	var hits []Hit
	for i := range ix.entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := &ix.entries[i]
		if docID != "" && e.doc.ID != docID {
			continue
		}
		score := 0.0
		for t := range uniq {
			tf := float64(e.tf[t])
			if tf == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(e.length)/ix.avgLen))
		}
		if score == 0 {
			continue
		}
		if len([]rune(phrase)) > 1 && strings.Contains(e.plain, phrase) {
			score *= phraseBoost
		}
		hits = append(hits, Hit{Doc: e.doc, Clause: e.clause, Score: score})
	}
	return hits, nil
}

// isHan reports whether r belongs to a script written without spaces.
func isHan(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// tokenize splits s into runs of CJK characters and English words and calls
// cjk or word for each.
func tokenize(s string, cjk func([]rune), word func(string)) {
	var run []rune
	var w strings.Builder
	flush := func() {
		if len(run) > 0 {
			cjk(run)
			run = run[:0]
		}
		if w.Len() > 0 {
			word(w.String())
			w.Reset()
		}
	}
	for _, r := range s {
		switch {
		case isHan(r):
			if w.Len() > 0 {
				flush()
			}
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if len(run) > 0 {
				flush()
			}
			w.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
}

// indexTokens returns the tokens a text is indexed under: CJK bigrams and
// single characters, and normalised English words.
func indexTokens(s string) []string {
	var out []string
	tokenize(s, func(run []rune) {
		for i := range run {
			out = append(out, string(run[i]))
			if i+1 < len(run) {
				out = append(out, string(run[i:i+2]))
			}
		}
	}, func(w string) {
		if t := normWord(w); t != "" {
			out = append(out, t)
		}
	})
	return out
}

// queryTokens returns the tokens a query is matched with: CJK bigrams (a
// single character only when it stands alone) and normalised English words.
func queryTokens(s string) []string {
	var out []string
	tokenize(s, func(run []rune) {
		if len(run) == 1 {
			out = append(out, string(run))
			return
		}
		for i := 0; i+1 < len(run); i++ {
			out = append(out, string(run[i:i+2]))
		}
	}, func(w string) {
		if t := normWord(w); t != "" {
			out = append(out, t)
		}
	})
	return out
}

// fallbackTokens is queryTokens with single CJK characters instead of bigrams.
func fallbackTokens(s string) []string {
	var out []string
	tokenize(s, func(run []rune) {
		for _, r := range run {
			out = append(out, string(r))
		}
	}, func(w string) {
		if t := normWord(w); t != "" {
			out = append(out, t)
		}
	})
	return out
}

var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"do": true, "does": true, "for": true, "from": true, "how": true, "i": true, "if": true, "in": true,
	"is": true, "it": true, "its": true, "may": true, "my": true, "of": true, "on": true, "or": true,
	"our": true, "that": true, "the": true, "their": true, "there": true, "this": true, "to": true,
	"we": true, "what": true, "when": true, "which": true, "who": true, "with": true, "you": true,
	"your": true, "can": true, "s": true,
}

// normWord drops stopwords and folds simple English plurals
// (policies → policy, laptops → laptop) so query and text meet.
func normWord(w string) string {
	if stopwords[w] {
		return ""
	}
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}
