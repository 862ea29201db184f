package registry

import (
	"sort"

	"github.com/skillhost/skillhost/pkg/registry/textindex"
)

// searchIndex is the text index of a snapshot. It is immutable; replace
// returns a new one that shares what the changed skill did not touch, so a
// swap at 10,000 tools costs milliseconds and never blocks readers.
type searchIndex struct {
	ix *textindex.Index
}

func newSearchIndex() *searchIndex { return &searchIndex{ix: textindex.New(nil)} }

func (s *searchIndex) replace(skill string, tools []*Tool, e *skillEntry) *searchIndex {
	docs := make([]textindex.Doc, 0, len(tools))
	for _, t := range tools {
		docs = append(docs, textindex.Doc{
			Key: t.Name, Skill: t.Skill, Name: t.local, Description: t.Description, Tags: t.Tags,
			SkillDescription: e.description, Params: textindex.ParamsFromSchema(t.InputSchema), Ref: t,
		})
	}
	return &searchIndex{ix: s.ix.Replace(skill, docs)}
}

// search ranks text; accept filters a tool and gives its score multiplier
// (the tag boost). A few more hits than asked are ranked so that the boost
// can reorder them before the cut.
func (s *searchIndex) search(text string, limit int, accept func(*Tool) (bool, float64)) []Hit {
	boosts := map[*Tool]float64{}
	raw := s.ix.Search(textindex.Query{Text: text, Limit: limit * 2, Accept: func(h textindex.Hit) bool {
		t := h.Ref.(*Tool)
		ok, b := accept(t)
		if ok {
			boosts[t] = b
		}
		return ok
	}})
	hits := make([]Hit, 0, len(raw))
	for _, h := range raw {
		t := h.Ref.(*Tool)
		hits = append(hits, Hit{Tool: t, Score: h.Score * boosts[t]})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	return hits
}
