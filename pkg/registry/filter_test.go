package registry

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseFilter(t *testing.T) {
	for _, tt := range []struct {
		q    url.Values
		want string // String() of the filter, or the error's message
	}{
		{url.Values{}, "all tools"},
		{url.Values{"other": {"x"}}, "all tools"},
		{url.Values{"tags": {"Math, text", "math"}, "skills": {"calc"}, "read_only": {"1"}}, "read_only=true&skills=calc&tags=math%2Ctext"},
		{url.Values{"tags": {"b,a"}, "match": {"ALL"}}, "match=all&tags=a%2Cb"},
		{url.Values{"tags": {"a"}, "match": {"all"}}, "tags=a"}, // one tag: all is any
		{url.Values{"read_only": {"F"}}, "all tools"},
		{url.Values{"read_only": {"maybe"}}, `bad filter: read_only: must be true or false, not "maybe"`},
		{url.Values{"read_only": {""}}, `bad filter: read_only: must be true or false, not ""`},
		{url.Values{"read_only": {"true", "true"}}, "bad filter: read_only: given 2 times; give it once"},
		{url.Values{"match": {"most"}}, `bad filter: match: must be "any" or "all", not "most"`},
		{url.Values{"skills": {"ok,no.dots"}}, `bad filter: skills[1]: "no.dots" is not a valid skill name`},
		{url.Values{"tags": {strings.Repeat("x", 65)}}, `bad filter: tags[0]: "` + strings.Repeat("x", 65) + `" is longer than 64 bytes`},
		{url.Values{"tags": {strings.Repeat("t,", 33) + "u"}}, "tags=t%2Cu"}, // deduped first
		{url.Values{"tags": {manyTags(33)}}, "bad filter: tags: names 33; a filter names at most 32"},
		{url.Values{"read_only": {"yes"}, "skills": {"A B"}}, `bad filter: read_only: must be true or false, not "yes"; skills[0]: "A B" is not a valid skill name`},
	} {
		f, err := ParseFilter(tt.q)
		got := f.String()
		if err != nil {
			got = AsError(err).Message
			if CodeOf(err) != CodeBadRequest || !f.IsZero() {
				t.Errorf("ParseFilter(%v): code %s, filter %+v", tt.q, CodeOf(err), f)
			}
		}
		if got != tt.want {
			t.Errorf("ParseFilter(%v)\n got %s\nwant %s", tt.q, got, tt.want)
		}
	}
}

// TestFilterQueryRoundTrip: what Query writes, ParseFilter reads back as
// the same filter, so an endpoint URL built from a filter offers what the
// filter does.
func TestFilterQueryRoundTrip(t *testing.T) {
	for _, f := range []Filter{
		{}, {ReadOnly: true}, {Tags: []string{"a", "b"}, MatchAll: true}, {Skills: []string{"calc", "text"}, Tags: []string{"x"}},
	} {
		back, err := ParseFilter(f.Query())
		if err != nil || back.String() != f.String() || back.MatchAll != (f.MatchAll && len(f.Tags) > 1) {
			t.Errorf("%+v → %s → %+v, %v", f, f.Query().Encode(), back, err)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	ro := &Tool{Skill: "policy", Tags: []string{"policy", "hr"}, Annotations: Annotations{ReadOnly: true}}
	rw := &Tool{Skill: "policy", Tags: []string{"policy"}}
	for _, tt := range []struct {
		f    Filter
		tool *Tool
		want bool
	}{
		{Filter{}, rw, true},
		{Filter{ReadOnly: true}, rw, false},
		{Filter{ReadOnly: true}, ro, true},
		{Filter{Tags: []string{"HR"}}, ro, true}, // not normalized: compared without case
		{Filter{Tags: []string{"hr", "policy"}, MatchAll: true}, rw, false},
		{Filter{Tags: []string{"hr", "policy"}}, rw, true},
		{Filter{Skills: []string{"Policy"}}, rw, true},
		{Filter{Skills: []string{"calc"}}, rw, false},
	} {
		if got := tt.f.Match(tt.tool); got != tt.want {
			t.Errorf("%+v matches %+v = %v", tt.f, tt.tool, got)
		}
	}
}

// FuzzParseFilter: no query crashes the parser, a filter it accepts is
// normalized (parsing its own query gives it back), and a refusal is
// always a bad_request.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"tags=a,b&match=all", "read_only=1", "read_only=maybe", "skills=x.y", "tags=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		flt, err := ParseFilter(q)
		if err != nil {
			if CodeOf(err) != CodeBadRequest {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		back, err := ParseFilter(flt.Query())
		if err != nil || back.String() != flt.String() {
			t.Fatalf("%q: %+v does not read back: %+v, %v", raw, flt, back, err)
		}
	})
}

func manyTags(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = "t" + strconv.Itoa(i)
	}
	return strings.Join(tags, ",")
}

// BenchmarkFilterSearch10k ranks the BFCL queries over 10,000+ tools with a
// filter on (two tags, any of them), and lists every match of the filter
// alone, which visits every tool: what the filter costs a search.
func BenchmarkFilterSearch10k(b *testing.B) {
	cat, qs := loadBenchCatalog(b)
	reg := New(Config{})
	fillRegistry(b, reg, cat, benchTools)
	snap := reg.Snapshot()
	count := map[string]int{}
	for _, t := range snap.Tools() {
		for _, tag := range t.Tags {
			count[tag]++
		}
	}
	var tags []string // the two commonest: the filter passes many tools
	for tag := range count {
		tags = append(tags, tag)
	}
	slices.SortFunc(tags, func(a, b string) int { return count[b] - count[a] })
	if len(tags) < 2 {
		b.Fatalf("the catalogue has %d tags", len(tags))
	}
	tags = tags[:2]
	b.Logf("tags %v on %d and %d of %d tools", tags, count[tags[0]], count[tags[1]], snap.Len())
	b.Run("text", func(b *testing.B) {
		i := 0
		for b.Loop() {
			snap.Search(Query{Text: qs[i%len(qs)].Text, Filter: Filter{Tags: tags}})
			i++
		}
	})
	b.Run("filter-only", func(b *testing.B) {
		for b.Loop() {
			snap.Search(Query{Filter: Filter{Tags: tags}, Limit: MaxLimit})
		}
	})
}
