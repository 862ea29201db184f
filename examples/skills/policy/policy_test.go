package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skillhost/skillhost/sdk"
)

func testIndex(t *testing.T) *Index {
	t.Helper()
	docs, err := loadCorpus(corpusFS, "corpus")
	if err != nil {
		t.Fatal(err)
	}
	return NewIndex(docs)
}

func TestCorpus(t *testing.T) {
	ix := testIndex(t)
	want := map[string]int{"code-of-conduct": 9, "data-retention": 6, "infosec": 9, "leave": 10, "remote-work": 8, "travel-expense": 10}
	if len(ix.docs) != len(want) {
		t.Fatalf("corpus has %d documents, want %d", len(ix.docs), len(want))
	}
	for _, d := range ix.docs {
		if n, ok := want[d.ID]; !ok || len(d.Clauses) != n {
			t.Errorf("document %s (%s) has %d clauses, want %d", d.ID, d.Source, len(d.Clauses), n)
		}
		for i, c := range d.Clauses {
			if c.Heading == "" || c.Text == "" || strings.Contains(c.Text, "## ") {
				t.Errorf("%s clause %s: heading %q text %.40q", d.ID, c.ID, c.Heading, c.Text)
			}
			if i > 0 && c.ID == d.Clauses[i-1].ID {
				t.Errorf("%s: clause id %s repeated", d.ID, c.ID)
			}
		}
	}
	c := ix.byID["travel-expense"].Clauses[9]
	if c.ID != "10" || c.Label != "第十条" || c.Heading != "附则" {
		t.Errorf("travel-expense clause 10 = %+v", c)
	}
}

func TestLoadCorpusErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"c/a.md":    {Data: []byte("---\nid: a\ntitle: A\nlang: en\n---\n## 1. One\ntext\n")},
		"c/dup.md":  {Data: []byte("---\nid: a\ntitle: A again\nlang: en\n---\n## 1. One\ntext\n")},
		"c/bad.md":  {Data: []byte("---\nid: Bad_ID\ntitle: T\nlang: fr\n---\n## 1. One\n\n## 1. Again\nx\n")},
		"c/nohd.md": {Data: []byte("---\nid: nohd\ntitle: T\nlang: en\n---\n## Purpose\ntext\n")},
		"c/j.json":  {Data: []byte(`{"id": "j", "title": "J", "lang": "en", "clauses": []}`)},
	}
	_, err := loadCorpus(fsys, "c")
	if err == nil {
		t.Fatal("loadCorpus accepted a broken corpus")
	}
	for _, want := range []string{`c/dup.md: document id "a" already used by c/a.md`, `id "Bad_ID"`, `lang "fr"`,
		`clause id "1" appears twice`, `has no id or no text`, `c/nohd.md: line 6: clause heading "Purpose"`, "c/j.json: no clauses"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseChineseNumber(t *testing.T) {
	for s, want := range map[string]int{"一": 1, "十": 10, "十二": 12, "二十": 20, "二十三": 23, "一百零五": 105, "两百": 200, "7": 7} {
		if got, ok := parseChineseNumber(s); !ok || got != want {
			t.Errorf("parseChineseNumber(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "百", "abc", "十x"} {
		if _, ok := parseChineseNumber(s); ok {
			t.Errorf("parseChineseNumber(%q) accepted", s)
		}
	}
	for s, want := range map[string]string{"5": "5", "第五条": "5", "第5条": "5", "§4": "4", "Section 4.2": "4.2", "clause 3": "3", "十": "10", " 4. ": "4"} {
		if got := normalizeClauseID(s); got != want {
			t.Errorf("normalizeClauseID(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestTokens(t *testing.T) {
	if got := strings.Join(queryTokens("报销标准 for Remote-Work policies"), " "); got != "报销 销标 标准 remote work policy" {
		t.Errorf("queryTokens = %q", got)
	}
	if got := strings.Join(indexTokens("年假 VPN"), " "); got != "年 年假 假 vpn" {
		t.Errorf("indexTokens = %q", got)
	}
	if got := strings.Join(queryTokens("假"), " "); got != "假" {
		t.Errorf("queryTokens(假) = %q", got)
	}
}

func search1(t *testing.T, ix *Index, q string) Hit {
	t.Helper()
	hits, total, err := ix.Search(context.Background(), q, "", 3)
	if err != nil || len(hits) == 0 || total < len(hits) {
		t.Fatalf("Search(%q) = %d hits of %d, %v", q, len(hits), total, err)
	}
	return hits[0]
}

func TestSearch(t *testing.T) {
	ix := testIndex(t)
	tests := []struct {
		query, doc, clause string
	}{
		{"报销标准", "travel-expense", "5"},
		{"住宿费", "travel-expense", "5"},
		{"remote work equipment", "remote-work", "4"},
		{"home office allowance", "remote-work", "4"},
		{"病假需要什么证明", "leave", "4"},
		{"年假天数", "leave", "3"}, // text says 年休假（简称年假）
		{"产假多少天", "leave", "6"},
		{"密码多久更换", "infosec", "3"},
		{"数据泄露报告", "infosec", "7"},
		{"gifts from suppliers", "code-of-conduct", "5"},
		{"retaliation", "code-of-conduct", "8"},
		{"legal hold", "data-retention", "5"},
		{"backups", "data-retention", "4"},
	}
	for _, tt := range tests {
		h := search1(t, ix, tt.query)
		if h.Doc.ID != tt.doc || h.Clause.ID != tt.clause {
			t.Errorf("Search(%q) top = %s clause %s (%s), want %s clause %s", tt.query, h.Doc.ID, h.Clause.ID, h.Clause.Heading, tt.doc, tt.clause)
		}
	}
	// Scores are sorted and the document filter holds.
	hits, _, err := ix.Search(context.Background(), "VPN", "infosec", 10)
	if err != nil || len(hits) == 0 {
		t.Fatalf("Search(VPN, infosec) = %v, %v", hits, err)
	}
	for i, h := range hits {
		if h.Doc.ID != "infosec" || (i > 0 && h.Score > hits[i-1].Score) {
			t.Errorf("hit %d = %s %.3f", i, h.Doc.ID, h.Score)
		}
	}
	if hits, total, _ := ix.Search(context.Background(), "zebra quantum", "", 5); len(hits) != 0 || total != 0 {
		t.Errorf("nonsense query matched %d clauses", total)
	}
}

func TestSearchCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := testIndex(t).Search(ctx, "报销", "", 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("Search with cancelled ctx = %v", err)
	}
}

func TestToolErrors(t *testing.T) {
	ix := testIndex(t)
	ctx := context.Background()
	check := func(what string, err error, code, msg string) {
		t.Helper()
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != code || !strings.Contains(se.Message, msg) {
			t.Errorf("%s: error = %v; want %s containing %q", what, err, code, msg)
		}
	}
	_, err := search(ctx, ix, searchIn{Query: "   "})
	check("empty query", err, "invalid_arguments", "query is empty")
	_, err = search(ctx, ix, searchIn{Query: "the of and"})
	check("stopwords", err, "empty_query", "no searchable words")
	_, err = search(ctx, ix, searchIn{Query: "x", Limit: 50})
	check("limit", err, "invalid_arguments", "limit 50")
	_, err = search(ctx, ix, searchIn{Query: strings.Repeat("报", 501)})
	check("long query", err, "invalid_arguments", "limit is 500")
	_, err = search(ctx, ix, searchIn{Query: "x", Document: "nope"})
	check("bad document", err, "unknown_document", `no policy document "nope"; documents are code-of-conduct, data-retention`)
	_, err = getClause(ix, getClauseIn{Document: "leave", Clause: "99"})
	check("bad clause", err, "unknown_clause", `document leave (请假条例) has no clause "99"; its clauses are 1, 2`)
	_, err = getClause(ix, getClauseIn{Document: "vacation", Clause: "1"})
	check("bad document", err, "unknown_document", `"vacation"`)
}
