package filtertest

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Word is in the description of every tool of [Registry], so that a face
// which ranks by text (an agent run asked about it) can be offered every
// tool its filter lets through.
const Word = "widget"

// Registry returns the fixture: three skills whose tools differ in tags,
// skill and read-only annotation, served by in-process invokers.
//
//	calc.add    math, arith   read-only     calc.sub   math, arith
//	calc.plot   math, chart   read-only     text.upper text          read-only
//	text.wipe   text, admin                  docs.find  text, search  read-only
func Registry(t testing.TB) *registry.Registry {
	t.Helper()
	reg := registry.New(registry.Config{})
	type tool struct {
		name string
		tags []string
		ro   bool
	}
	for _, s := range []struct {
		skill string
		tags  []string
		tools []tool
	}{
		{"calc", []string{"math"}, []tool{{"add", []string{"arith"}, true}, {"sub", []string{"arith"}, false}, {"plot", []string{"chart"}, true}}},
		{"text", []string{"text"}, []tool{{"upper", nil, true}, {"wipe", []string{"admin"}, false}}},
		{"docs", []string{"text"}, []tool{{"find", []string{"search"}, true}}},
	} {
		spec := registry.SkillSpec{Name: s.skill, Version: "1.0.0", Description: s.skill + " skill", Tags: s.tags, Backend: Echo{}}
		for _, tl := range s.tools {
			spec.Tools = append(spec.Tools, registry.ToolSpec{
				Name: tl.name, Description: "The " + tl.name + " " + Word + " of " + s.skill + ".", Tags: tl.tags,
				InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: registry.Annotations{ReadOnly: tl.ro},
			})
		}
		if _, err := reg.Put(spec); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// Echo is an in-process backend that answers every call with its
// arguments.
type Echo struct{}

func (Echo) Acquire() bool { return true }
func (Echo) Release()      {}
func (Echo) Invoke(_ context.Context, _ string, args []byte, _ int64) ([]byte, error) {
	return args, nil
}

// Case is one filter and what every face must make of it.
type Case struct {
	Name  string
	Query url.Values
	// Want are the qualified names offered, sorted; nil with BadParams.
	Want []string
	// BadParams are the parameters a face must name in its refusal.
	BadParams []string
}

var (
	all      = []string{"calc.add", "calc.plot", "calc.sub", "docs.find", "text.upper", "text.wipe"}
	readOnly = []string{"calc.add", "calc.plot", "docs.find", "text.upper"}
)

// Cases is the table.
var Cases = []Case{
	{Name: "no filter", Query: url.Values{}, Want: all},
	{Name: "read_only=true", Query: url.Values{"read_only": {"true"}}, Want: readOnly},
	{Name: "read_only=1", Query: url.Values{"read_only": {"1"}}, Want: readOnly},
	{Name: "read_only=True", Query: url.Values{"read_only": {"True"}}, Want: readOnly},
	{Name: "read_only=false", Query: url.Values{"read_only": {"false"}}, Want: all},
	{Name: "read_only=0", Query: url.Values{"read_only": {"0"}}, Want: all},
	{Name: "tag of a skill", Query: url.Values{"tags": {"math"}}, Want: []string{"calc.add", "calc.plot", "calc.sub"}},
	{Name: "tags any, mixed case", Query: url.Values{"tags": {"CHART, admin"}}, Want: []string{"calc.plot", "text.wipe"}},
	{Name: "tags repeated", Query: url.Values{"tags": {"chart", "admin"}}, Want: []string{"calc.plot", "text.wipe"}},
	{Name: "tags all", Query: url.Values{"tags": {"math,arith"}, "match": {"all"}}, Want: []string{"calc.add", "calc.sub"}},
	{Name: "tags all, read-only", Query: url.Values{"tags": {"text,search"}, "match": {"all"}, "read_only": {"true"}}, Want: []string{"docs.find"}},
	{Name: "skills", Query: url.Values{"skills": {"text,docs"}}, Want: []string{"docs.find", "text.upper", "text.wipe"}},
	{Name: "skills and tags and read-only", Query: url.Values{"skills": {"text"}, "tags": {"text"}, "read_only": {"true"}}, Want: []string{"text.upper"}},
	{Name: "nothing matches", Query: url.Values{"tags": {"nosuchtag"}}, Want: []string{}},
	{Name: "read_only unparsable", Query: url.Values{"read_only": {"maybe"}}, BadParams: []string{"read_only"}},
	{Name: "read_only empty", Query: url.Values{"read_only": {""}}, BadParams: []string{"read_only"}},
	{Name: "read_only twice", Query: url.Values{"read_only": {"true", "false"}}, BadParams: []string{"read_only"}},
	{Name: "match unknown", Query: url.Values{"tags": {"math"}, "match": {"most"}}, BadParams: []string{"match"}},
	{Name: "skill name invalid", Query: url.Values{"skills": {"no.dots"}}, BadParams: []string{"skills"}},
	{Name: "tag too long", Query: url.Values{"tags": {strings.Repeat("x", 65)}}, BadParams: []string{"tags"}},
	{Name: "every problem at once", Query: url.Values{"read_only": {"yes please"}, "skills": {"Bad Name"}}, BadParams: []string{"read_only", "skills"}},
}

// Face is one way into the host, as a test drives it.
type Face struct {
	// List offers the tools a filter given as q lets through, as qualified
	// names, or fails.
	List func(t *testing.T, q url.Values) ([]string, error)
	// Param names a filter parameter as the face's refusals name it; nil
	// is the parameter's own name.
	Param func(param string) string
}

// Run checks every case against face: the tools it offers, or a refusal
// that names each bad parameter. A refusal that is not a bad_request, or a
// filter that offers tools where it should refuse, fails.
func Run(t *testing.T, face Face) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := face.List(t, c.Query)
			if c.BadParams == nil {
				if err != nil {
					t.Fatalf("%v: %v", c.Query, err)
				}
				slices.Sort(got)
				if got == nil {
					got = []string{}
				}
				if !slices.Equal(got, c.Want) {
					t.Fatalf("%v offers %v, want %v", c.Query, got, c.Want)
				}
				return
			}
			if err == nil {
				t.Fatalf("%v accepted, offering %v; want a refusal naming %v", c.Query, got, c.BadParams)
			}
			if code := registry.CodeOf(err); code != registry.CodeBadRequest {
				t.Errorf("%v: code %q, want bad_request: %v", c.Query, code, err)
			}
			for _, p := range c.BadParams {
				if face.Param != nil {
					p = face.Param(p)
				}
				if !strings.Contains(err.Error(), p) {
					t.Errorf("%v: the refusal does not name %s: %v", c.Query, p, err)
				}
			}
		})
	}
}
