package registry

import (
	"context"
	"sort"
	"strings"
)

// Query selects tools for a request: the tools that pass the filter,
// ranked by the text.
type Query struct {
	Text string // free text, ranked
	Filter
	Limit int // <= 0 means DefaultLimit; capped at MaxLimit
}

// Hit is a ranked tool.
type Hit struct {
	Tool  *Tool
	Score float64
}

// DefaultLimit is how many tools a search returns unless told otherwise: a
// model chooses best among a handful.
const DefaultLimit = 5

// MaxLimit is OpenAI's cap on tools in one request.
const MaxLimit = 128

// tagBoost raises the text score of a tool per requested tag it carries, so
// that under match-any the tools matching more tags come first.
const tagBoost = 0.25

// Reranker reorders the best text hits of a query, e.g. by embedding
// similarity. It is optional; when it fails, Search keeps the text order and
// the reranker is expected to say so in its own log. Rerank must be safe for
// concurrent use and must not return tools that were not in hits.
type Reranker interface {
	Rerank(ctx context.Context, query string, hits []Hit) ([]Hit, error)
}

// rerankPool is how many text hits a reranker sees: enough for it to lift a
// tool the text ranking placed low, few enough to embed cheaply.
const rerankPool = 30

// Search ranks with no deadline; see SearchContext.
func (s *Snapshot) Search(q Query) []Hit { return s.SearchContext(context.Background(), q) }

// SearchContext ranks the available tools of the snapshot for q. Unavailable tools
// are never returned. With no text, tools that pass the filters are ordered
// by how many requested tags they carry, then by name.
func (s *Snapshot) SearchContext(ctx context.Context, q Query) []Hit {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		limit = MaxLimit
	}
	f := q.Filter.lower()
	accept := func(t *Tool) (bool, int) {
		if !t.skill.available.Load() {
			return false, 0
		}
		return f.match(t)
	}
	var hits []Hit
	if strings.TrimSpace(q.Text) == "" {
		for _, t := range s.sorted {
			if ok, matched := accept(t); ok {
				hits = append(hits, Hit{Tool: t, Score: float64(matched)})
			}
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	} else {
		pool := limit
		if s.rerank != nil {
			pool = max(limit, rerankPool)
		}
		hits = s.index.search(q.Text, pool, func(t *Tool) (bool, float64) {
			ok, matched := accept(t)
			return ok, 1 + tagBoost*float64(matched)
		})
		if s.rerank != nil && len(hits) > 1 {
			if re, err := s.rerank.Rerank(ctx, q.Text, hits); err == nil {
				hits = re
			}
		}
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}
