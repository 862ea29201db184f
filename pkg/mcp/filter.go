package mcp

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// Filter selects the subset of the registry one endpoint offers. The zero
// Filter offers every tool.
type Filter struct {
	Tags     []string // tools carrying any of these tags (the tool's own or its skill's)
	Skills   []string // tools of these skills only
	ReadOnly bool     // tools annotated read-only only
}

// maxFilterItems bounds the tags and skills of one filter.
const maxFilterItems = 32

// ParseFilter reads a filter from query parameters: tags and skills (comma
// separated, repeatable) and read_only (true or false). Unknown parameters
// are ignored, so a client may add its own.
func ParseFilter(q url.Values) (Filter, error) {
	f := Filter{Tags: httpjson.ListParam(q, "tags"), Skills: httpjson.ListParam(q, "skills")}
	if v := q.Get("read_only"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Filter{}, fmt.Errorf("read_only must be true or false, not %q", v)
		}
		f.ReadOnly = b
	}
	return f.normalize()
}

// normalize lowercases, sorts and dedupes, and checks the names, so that
// equal filters share one view.
func (f Filter) normalize() (Filter, error) {
	f.Tags = sortedSet(f.Tags)
	f.Skills = sortedSet(f.Skills)
	if len(f.Tags) > maxFilterItems || len(f.Skills) > maxFilterItems {
		return Filter{}, fmt.Errorf("a filter names at most %d tags and %d skills", maxFilterItems, maxFilterItems)
	}
	for _, t := range f.Tags {
		if len(t) > 64 {
			return Filter{}, fmt.Errorf("tag %q is longer than 64 characters", t)
		}
	}
	for _, s := range f.Skills {
		if !registry.ValidName(s) {
			return Filter{}, fmt.Errorf("skill name %q is not a valid skill name", s)
		}
	}
	return f, nil
}

func sortedSet(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Match reports whether t passes the filter.
func (f Filter) Match(t *registry.Tool) bool {
	if f.ReadOnly && !t.Annotations.ReadOnly {
		return false
	}
	if len(f.Skills) > 0 && !slices.Contains(f.Skills, t.Skill) {
		return false
	}
	if len(f.Tags) == 0 {
		return true
	}
	for _, tag := range t.Tags {
		if slices.Contains(f.Tags, tag) {
			return true
		}
	}
	return false
}

// IsZero reports whether the filter offers every tool.
func (f Filter) IsZero() bool { return len(f.Tags) == 0 && len(f.Skills) == 0 && !f.ReadOnly }

// Query is the filter as query parameters (empty for the zero filter).
func (f Filter) Query() url.Values {
	q := url.Values{}
	if len(f.Tags) > 0 {
		q.Set("tags", strings.Join(f.Tags, ","))
	}
	if len(f.Skills) > 0 {
		q.Set("skills", strings.Join(f.Skills, ","))
	}
	if f.ReadOnly {
		q.Set("read_only", "true")
	}
	return q
}

// String is the filter's canonical form ("all tools" for the zero filter).
func (f Filter) String() string {
	if f.IsZero() {
		return "all tools"
	}
	return f.Query().Encode()
}
