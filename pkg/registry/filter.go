package registry

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Filter selects the tools a caller may see and call: an MCP endpoint, an
// agent profile, a search on the HTTP API. It is one type with one parser
// ([ParseFilter]) so that every face reads the same words the same way; a
// filter that read "read_only=1" as "no filter" on one face and as "read-only
// only" on another would fail open where it mattered most. The zero Filter
// lets every tool through.
type Filter struct {
	Tags     []string // tools carrying any of these tags (all of them with MatchAll); a tool's tags include its skill's
	MatchAll bool     // Tags must all be present, not just one
	Skills   []string // tools of these skills only
	ReadOnly bool     // tools annotated read-only only
}

// MaxFilterItems bounds the tags and the skills of one filter.
const MaxFilterItems = 32

// maxTagLen bounds one tag of a filter: no tool carries a longer one worth
// asking for, and a filter is a key callers choose.
const maxTagLen = 64

// The query parameters [ParseFilter] reads.
const (
	ParamTags     = "tags"
	ParamMatch    = "match"
	ParamSkills   = "skills"
	ParamReadOnly = "read_only"
)

// FilterProblem is one thing wrong with a filter: the field it concerns
// ("tags[2]", "read_only") and why, so each face can name it in its own
// terms (a query parameter, a profile's path).
type FilterProblem struct {
	Field  string
	Reason string
}

func (p FilterProblem) String() string { return p.Field + ": " + p.Reason }

// FilterProblems are all that is wrong with a filter.
type FilterProblems []FilterProblem

// Err is the problems as one *Error with code bad_request that names each
// field, the fields also in its "parameters" detail; nil when there are
// none.
func (ps FilterProblems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	fields := make([]string, len(ps))
	for i, p := range ps {
		msgs[i], fields[i] = p.String(), p.Field
	}
	return Errorf(CodeBadRequest, "bad filter: %s", strings.Join(msgs, "; ")).With("parameters", fields)
}

// ParseFilter reads a filter from query parameters: tags and skills (comma
// separated, repeatable), match ("any", the default, or "all") and read_only
// (a boolean as [ParseBool] reads it). Other parameters are left to the
// caller. A value that does not parse is an error naming the parameter,
// never "no filter"; every problem is reported at once, as one *Error with
// code bad_request and the fields in its "parameters" detail.
func ParseFilter(q url.Values) (Filter, error) {
	var f Filter
	var problems FilterProblems
	f.Tags, f.Skills = ListParam(q, ParamTags), ListParam(q, ParamSkills)
	if v, ok := single(q, ParamMatch, &problems); ok {
		all, err := ParseMatch(v)
		if err != nil {
			problems = append(problems, FilterProblem{ParamMatch, err.Error()})
		}
		f.MatchAll = all
	}
	if v, ok := single(q, ParamReadOnly, &problems); ok {
		ro, err := ParseBool(v)
		if err != nil {
			problems = append(problems, FilterProblem{ParamReadOnly, err.Error()})
		}
		f.ReadOnly = ro
	}
	f, more := f.Normalize()
	if err := append(problems, more...).Err(); err != nil {
		return Filter{}, err
	}
	return f, nil
}

// single returns the one value of a parameter that may be given once. A
// parameter given twice is a problem rather than a choice between its
// values: read_only=true&read_only=false has no safe reading.
func single(q url.Values, key string, problems *FilterProblems) (string, bool) {
	vs, ok := q[key]
	if !ok {
		return "", false
	}
	if len(vs) > 1 {
		*problems = append(*problems, FilterProblem{key, fmt.Sprintf("given %d times; give it once", len(vs))})
		return "", false
	}
	return vs[0], true
}

// ParseBool reads a boolean the one way every face of the host reads one,
// as strconv.ParseBool does: 1, t, T, true, True, TRUE, and 0, f, F, false,
// False, FALSE. Anything else, the empty string included, is an error.
func ParseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("must be true or false, not %q", v)
	}
	return b, nil
}

// ParseMatch reads how tags combine: "any" (or "") is false, "all" is true.
func ParseMatch(v string) (all bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "any":
		return false, nil
	case "all":
		return true, nil
	}
	return false, fmt.Errorf(`must be "any" or "all", not %q`, v)
}

// ListParam reads a list query parameter that may be repeated and comma
// separated (?tags=a,b&tags=c), trimming blanks.
func ListParam(q url.Values, key string) []string {
	var out []string
	for _, v := range q[key] {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Normalize lowercases, sorts and dedupes the tags and skills, so that equal
// filters compare equal (an MCP endpoint shares one view per filter), and
// checks them: no blank entry (a blank tag must not read as "any tag"), at
// most MaxFilterItems of each, valid skill names. It returns every problem.
func (f Filter) Normalize() (Filter, FilterProblems) {
	var problems FilterProblems
	// check lowercases in, reporting each entry valid refuses with the
	// entry as given.
	check := func(field string, in []string, valid func(string) string) []string {
		if len(in) == 0 {
			return nil
		}
		out := make([]string, 0, len(in))
		for i, s := range in {
			l := strings.ToLower(strings.TrimSpace(s))
			why := valid(l)
			switch {
			case l == "":
				problems = append(problems, FilterProblem{fmt.Sprintf("%s[%d]", field, i), "is empty"})
			case why != "":
				problems = append(problems, FilterProblem{fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%q %s", s, why)})
			default:
				out = append(out, l)
			}
		}
		slices.Sort(out)
		out = slices.Compact(out)
		if len(out) > MaxFilterItems {
			problems = append(problems, FilterProblem{field, fmt.Sprintf("names %d; a filter names at most %d", len(out), MaxFilterItems)})
		}
		return out
	}
	f.Tags = check(ParamTags, f.Tags, func(s string) string {
		if len(s) > maxTagLen {
			return fmt.Sprintf("is longer than %d bytes", maxTagLen)
		}
		return ""
	})
	f.Skills = check(ParamSkills, f.Skills, func(s string) string {
		if !ValidName(s) {
			return "is not a valid skill name"
		}
		return ""
	})
	return f, problems
}

// Match reports whether t passes the filter. Tags and skills compare
// without case, so a filter built in code without Normalize still fails
// closed, never open. Availability is not the filter's business: search
// leaves unavailable tools out on its own.
func (f Filter) Match(t *Tool) bool {
	ok, _ := f.lower().match(t)
	return ok
}

// lower returns f with its tags and skills lowercased, as a tool's are,
// sharing f's slices when they already are (a normalized filter costs
// nothing).
func (f Filter) lower() Filter {
	f.Tags, f.Skills = lowerAll(f.Tags), lowerAll(f.Skills)
	return f
}

func lowerAll(in []string) []string {
	for i, s := range in {
		if strings.ToLower(s) != s {
			out := slices.Clone(in)
			for j := i; j < len(out); j++ {
				out[j] = strings.ToLower(out[j])
			}
			return out
		}
	}
	return in
}

// match is Match for a lowered filter, and also returns how many of the
// filter's tags t carries, which search ranks by. It runs once per
// candidate tool of a search, so it compares plainly and allocates
// nothing.
func (f Filter) match(t *Tool) (bool, int) {
	if f.ReadOnly && !t.Annotations.ReadOnly {
		return false, 0
	}
	if len(f.Skills) > 0 && !slices.Contains(f.Skills, t.Skill) {
		return false, 0
	}
	matched := 0
	for _, want := range f.Tags {
		if slices.Contains(t.Tags, want) {
			matched++
		}
	}
	if len(f.Tags) > 0 && (matched == 0 || (f.MatchAll && matched < len(f.Tags))) {
		return false, 0
	}
	return true, matched
}

// IsZero reports whether the filter lets every tool through.
func (f Filter) IsZero() bool {
	return len(f.Tags) == 0 && len(f.Skills) == 0 && !f.ReadOnly
}

// Query is the filter as the query parameters ParseFilter reads back
// (empty for the zero filter).
func (f Filter) Query() url.Values {
	q := url.Values{}
	if len(f.Tags) > 0 {
		q.Set(ParamTags, strings.Join(f.Tags, ","))
		if f.MatchAll && len(f.Tags) > 1 {
			q.Set(ParamMatch, "all")
		}
	}
	if len(f.Skills) > 0 {
		q.Set(ParamSkills, strings.Join(f.Skills, ","))
	}
	if f.ReadOnly {
		q.Set(ParamReadOnly, "true")
	}
	return q
}

// String is the filter's canonical form ("all tools" for the zero filter);
// equal normalized filters have equal strings.
func (f Filter) String() string {
	if f.IsZero() {
		return "all tools"
	}
	return f.Query().Encode()
}
