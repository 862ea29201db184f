package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type Page struct {
	Cursor *string `json:"cursor"`
}

type hit struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
}

type nullableOut struct {
	Page                                 // promoted: cursor
	Hits     []*hit                      `json:"hits"`
	Counts   map[string]int              `json:"counts"`
	Optional []string                    `json:"optional,omitempty"`
	Name     string                      `json:"name"`
	Groups   map[string][]string         `json:"groups"`
	Skip     []string                    `json:"-"`
	Nested   struct{ Inner []int }       `json:"nested"`
	Any      any                         `json:"any"`
	ByKey    map[string]*struct{ X int } `json:"by_key"`
}

// TestOutputSchemaAllowsWhatJSONWritesAsNull checks that every place where
// encoding/json may write null (a nil slice, map or pointer without
// omitempty, at any depth) has "null" among its types, and nothing else
// does.
func TestOutputSchemaAllowsWhatJSONWritesAsNull(t *testing.T) {
	raw, err := outputSchemaFor[nullableOut]()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	sub := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m = m[k].(map[string]any)
		}
		return m
	}
	nullable := []any{"array", "null"}
	for _, c := range []struct {
		got, want any
		what      string
	}{
		{sub(props, "cursor")["type"], []any{"string", "null"}, "promoted *string"},
		{sub(props, "hits")["type"], nullable, "[]*hit"},
		{sub(props, "hits", "items")["type"], []any{"object", "null"}, "*hit element"},
		{sub(props, "hits", "items", "properties", "tags")["type"], nullable, "hit.tags"},
		{sub(props, "counts")["type"], []any{"object", "null"}, "map"},
		{sub(props, "optional")["type"], "array", "omitempty slice"},
		{sub(props, "name")["type"], "string", "string"},
		{sub(props, "groups", "additionalProperties")["type"], nullable, "map value []string"},
		{sub(props, "nested", "properties", "Inner")["type"], nullable, "untagged nested field"},
		{sub(props, "by_key", "additionalProperties")["type"], []any{"object", "null"}, "map value pointer"},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: type %v, want %v", c.what, c.got, c.want)
		}
	}
	if _, ok := props["Skip"]; ok {
		t.Error(`a json:"-" field is in the schema`)
	}

	// A list result may itself be null; a struct result keeps the
	// reflector's schema byte for byte when nothing in it can be null.
	list, _ := outputSchemaFor[[]string]()
	if string(list) != `{"items":{"type":"string"},"type":["array","null"]}` {
		t.Errorf("[]string result: %s", list)
	}
	type plain struct {
		A string `json:"a"`
	}
	got, _ := outputSchemaFor[plain]()
	want, _ := schemaFor[plain]()
	if string(got) != string(want) {
		t.Errorf("plain struct: %s, want the reflector's %s", got, want)
	}
}

type Node struct {
	Name     string  `json:"name"`
	Children []*Node `json:"children,omitempty"`
}

type treeA struct {
	B map[string]treeB `json:"b"`
}

type treeB struct {
	A []treeA `json:"a"`
}

type selfEmbed struct {
	//lint:ignore U1000 only reflected on
	*selfEmbed
	X int `json:"x"`
}

type shared struct {
	Left, Right Page
	Up          *Node `json:"-"`
}

// panicOf runs f and returns what it panicked with, or "".
func panicOf(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}

// TestRecursiveTypesPanic checks that Tool refuses a type that contains
// itself, naming it, instead of overflowing the stack, and that a type
// using another twice, or skipping its recursive field, is not taken for
// one.
func TestRecursiveTypesPanic(t *testing.T) {
	handler := func(ctx context.Context, in struct{}) (struct{}, error) { return struct{}{}, nil }
	for _, c := range []struct {
		name  string
		tool  func(s *Skill)
		panic string // "" for none
	}{
		{"input", func(s *Skill) {
			Tool(s, "t", "d", func(ctx context.Context, in Node) (struct{}, error) { return struct{}{}, nil })
		}, `sdk: tool "t": input: sdk.Node contains itself (through sdk.Node): recursive types are not supported as tool input or output`},
		{"output", func(s *Skill) {
			Tool(s, "t", "d", func(ctx context.Context, in struct{}) ([]Node, error) { return nil, nil })
		}, `sdk: tool "t": output: []sdk.Node contains itself (through sdk.Node): recursive types`},
		{"mutual", func(s *Skill) {
			Tool(s, "t", "d", func(ctx context.Context, in treeA) (struct{}, error) { return struct{}{}, nil })
		}, "sdk.treeA contains itself (through sdk.treeA)"},
		{"embedded", func(s *Skill) {
			Tool(s, "t", "d", func(ctx context.Context, in struct{}) (selfEmbed, error) { return selfEmbed{}, nil })
		}, "sdk.selfEmbed contains itself (through sdk.selfEmbed)"},
		{"shared, skipped", func(s *Skill) {
			Tool(s, "t", "d", func(ctx context.Context, in shared) (shared, error) { return shared{}, nil })
			Tool(s, "u", "d", handler)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := panicOf(func() { c.tool(New("p", "1.0.0", "d")) })
			if c.panic == "" && got != "" || !strings.Contains(got, c.panic) {
				t.Errorf("panic %q, want one containing %q", got, c.panic)
			}
		})
	}
}

type Meta struct {
	Cursor string `json:"cursor"`
	Total  int    `json:"total" jsonschema:"required"`
}

// TestOutputSchemaPromotedThroughPointer checks that the fields of a struct
// embedded by pointer, which encoding/json leaves out when the pointer is
// nil, are not required in an output schema (unless tagged required), and
// that those of a struct embedded by value still are.
func TestOutputSchemaPromotedThroughPointer(t *testing.T) {
	type list struct {
		*Meta
		Items []string `json:"items"`
	}
	type byValue struct {
		Meta
		Items []string `json:"items"`
	}
	type onlyMeta struct {
		*Page
	}
	required := func(raw json.RawMessage) []any {
		t.Helper()
		var s struct {
			Required []any `json:"required"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s.Required
	}
	for _, c := range []struct {
		what string
		got  func() (json.RawMessage, error)
		want []any
	}{
		{"*Meta", outputSchemaFor[list], []any{"total", "items"}},
		{"Meta", outputSchemaFor[byValue], []any{"cursor", "total", "items"}},
		{"*Page alone", outputSchemaFor[onlyMeta], nil},
		{"[]list", func() (json.RawMessage, error) {
			raw, err := outputSchemaFor[[]list]()
			var s struct{ Items json.RawMessage }
			json.Unmarshal(raw, &s)
			return s.Items, err
		}, []any{"total", "items"}},
	} {
		raw, err := c.got()
		if err != nil {
			t.Fatal(err)
		}
		if got := required(raw); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: required %v, want %v (schema %s)", c.what, got, c.want, raw)
		}
	}
	if b, _ := json.Marshal(list{Items: []string{}}); string(b) != `{"items":[]}` {
		t.Fatalf("a nil *Meta encodes as %s; the test's premise is wrong", b)
	}
	in, _ := schemaFor[list]()
	if got := required(in); !reflect.DeepEqual(got, []any{"cursor", "total", "items"}) {
		t.Errorf("input schema: required %v; only the output schema changes", got)
	}
}
