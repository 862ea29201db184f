package main

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

const (
	defaultLimit  = 5
	maxLimit      = 20
	maxQueryRunes = 500
)

type searchIn struct {
	Query    string `json:"query" jsonschema:"minLength=1,maxLength=500" jsonschema_description:"What to look for, in Chinese or English, e.g. 住宿报销标准, 年假天数, remote work equipment, gifts limit."`
	Limit    int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20,default=5" jsonschema_description:"Maximum number of clauses to return (default 5, at most 20)."`
	Document string `json:"document,omitempty" jsonschema_description:"Only search this document id, e.g. travel-expense, leave, infosec, remote-work, code-of-conduct, data-retention."`
}

type clauseOut struct {
	Document string  `json:"document" jsonschema_description:"Document id, for get_clause."`
	Title    string  `json:"title" jsonschema_description:"Document title."`
	Clause   string  `json:"clause" jsonschema_description:"Clause id within the document, for get_clause."`
	Heading  string  `json:"heading" jsonschema_description:"Clause heading."`
	Citation string  `json:"citation" jsonschema_description:"How to cite the clause, e.g. 《差旅报销制度》第五条 or Remote Work Policy §4."`
	Text     string  `json:"text" jsonschema_description:"Full text of the clause."`
	Source   string  `json:"source" jsonschema_description:"Source file of the document inside the skill."`
	Score    float64 `json:"score,omitempty" jsonschema_description:"Relevance (BM25); higher is better."`
}

type searchOut struct {
	Results []clauseOut `json:"results" jsonschema_description:"Matching clauses, best first."`
	Total   int         `json:"total" jsonschema_description:"Number of matching clauses before the limit was applied."`
}

type getClauseIn struct {
	Document string `json:"document" jsonschema:"minLength=1" jsonschema_description:"Document id as returned by search_policies, e.g. travel-expense."`
	Clause   string `json:"clause" jsonschema:"minLength=1" jsonschema_description:"Clause id as returned by search_policies, e.g. 5; 第五条 and §5 are accepted too."`
}

// newSkill builds the skill over the bundled corpus; tests serve it
// in-process with skilltest.Start. A broken corpus is a build defect, so it
// panics (and the tests catch it).
func newSkill() *sdk.Skill {
	docs, err := loadCorpus(corpusFS, "corpus")
	if err != nil {
		panic("policy: bundled corpus: " + err.Error())
	}
	ix := NewIndex(docs)

	s := sdk.New("policy", "1.0.0",
		"Search company policies and regulations (公司制度、条例、报销、请假、信息安全) in Chinese and English, "+
			"and return matching clauses with their source: travel expense reimbursement (差旅报销制度), leave (请假条例), "+
			"information security (信息安全管理制度), remote work, code of conduct and data retention.")
	s.Tags = []string{"policy", "制度", "条例", "hr", "报销", "compliance"}
	s.Author = "skillhost examples"

	sdk.Tool(s, "search_policies",
		"Search company policies and regulations (公司制度、条例、报销标准、请假、年假、信息安全) and return the best-matching clauses "+
			"with document title, clause id, full text, citation and source file. Works with Chinese and English queries, "+
			"e.g. 住宿费报销标准, 病假需要什么证明, remote work equipment allowance, gifts from suppliers. "+
			"Quote the citation when answering from a clause.",
		func(ctx context.Context, in searchIn) (searchOut, error) { return search(ctx, ix, in) },
		sdk.ReadOnly(), sdk.WithTags("search", "检索", "规章制度"))

	sdk.Tool(s, "get_clause",
		"Return the full text of one policy clause by document id and clause id (as given by search_policies), "+
			"e.g. document travel-expense, clause 5 (第五条).",
		func(ctx context.Context, in getClauseIn) (clauseOut, error) { return getClause(ix, in) },
		sdk.ReadOnly(), sdk.WithTags("clause", "条款"))
	return s
}

func main() { newSkill().Serve() }

func toOut(d *Document, c *Clause, score float64) clauseOut {
	return clauseOut{
		Document: d.ID, Title: d.Title, Clause: c.ID, Heading: c.Heading,
		Citation: d.Citation(c), Text: c.Text, Source: d.Source,
		Score: math.Round(score*1000) / 1000,
	}
}

func search(ctx context.Context, ix *Index, in searchIn) (searchOut, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return searchOut{}, sdk.Errorf("invalid_arguments", "query is empty")
	}
	if n := utf8.RuneCountInString(q); n > maxQueryRunes {
		return searchOut{}, sdk.Errorf("invalid_arguments", "query has %d characters; the limit is %d", n, maxQueryRunes)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = defaultLimit
	case limit < 0 || limit > maxLimit:
		return searchOut{}, sdk.Errorf("invalid_arguments", "limit %d must be between 1 and %d", in.Limit, maxLimit)
	}
	if in.Document != "" {
		if _, ok := ix.byID[in.Document]; !ok {
			return searchOut{}, unknownDocument(ix, in.Document)
		}
	}
	if len(queryTokens(q)) == 0 {
		return searchOut{}, sdk.Errorf("empty_query", "query %q has no searchable words (only stopwords or punctuation)", q)
	}
	hits, total, err := ix.Search(ctx, q, in.Document, limit)
	if err != nil {
		return searchOut{}, err
	}
	out := searchOut{Results: make([]clauseOut, 0, len(hits)), Total: total}
	for _, h := range hits {
		out.Results = append(out.Results, toOut(h.Doc, h.Clause, h.Score))
	}
	return out, nil
}

func getClause(ix *Index, in getClauseIn) (clauseOut, error) {
	d, ok := ix.byID[strings.TrimSpace(in.Document)]
	if !ok {
		return clauseOut{}, unknownDocument(ix, in.Document)
	}
	id := normalizeClauseID(in.Clause)
	for i := range d.Clauses {
		if d.Clauses[i].ID == id {
			return toOut(d, &d.Clauses[i], 0), nil
		}
	}
	ids := make([]string, len(d.Clauses))
	for i, c := range d.Clauses {
		ids[i] = c.ID
	}
	return clauseOut{}, sdk.Errorf("unknown_clause", "document %s (%s) has no clause %q; its clauses are %s",
		d.ID, d.Title, in.Clause, strings.Join(ids, ", "))
}

func unknownDocument(ix *Index, id string) error {
	ids := make([]string, 0, len(ix.byID))
	for k := range ix.byID {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	return sdk.Errorf("unknown_document", "no policy document %q; documents are %s", id, strings.Join(ids, ", "))
}
