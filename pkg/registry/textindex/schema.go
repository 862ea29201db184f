package textindex

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// maxSchemaDepth bounds how deep ParamsFromSchema descends into nested
// objects and arrays: deeper properties are rarely what a user names.
const maxSchemaDepth = 3

// ParamsFromSchema extracts parameter names and descriptions from a JSON
// Schema: the top-level properties, the properties of nested objects and of
// array items (up to maxSchemaDepth levels), with enum values appended to
// the description as extra text. Nested parameters are named by their own
// property name. An invalid schema yields no params.
func ParamsFromSchema(schema []byte) []Param {
	var s jsonSchema
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []Param
	collectParams(&s, 0, &out)
	return out
}

// jsonSchema is the part of JSON Schema that carries words.
type jsonSchema struct {
	Description string                 `json:"description"`
	Title       string                 `json:"title"`
	Properties  map[string]*jsonSchema `json:"properties"`
	Items       json.RawMessage        `json:"items"` // a schema or (old drafts) an array of schemas
	Enum        []any                  `json:"enum"`
	AnyOf       []*jsonSchema          `json:"anyOf"`
	OneOf       []*jsonSchema          `json:"oneOf"`
}

func collectParams(s *jsonSchema, depth int, out *[]Param) {
	if s == nil || depth >= maxSchemaDepth {
		return
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names) // stable output
	for _, name := range names {
		p := s.Properties[name]
		if p == nil {
			continue
		}
		*out = append(*out, Param{Name: name, Description: describe(p)})
		for _, sub := range p.children() {
			collectParams(sub, depth+1, out)
		}
	}
}

// children returns the schemas below s whose properties are parameters too:
// array items and anyOf/oneOf alternatives, and s itself for an object.
func (s *jsonSchema) children() []*jsonSchema {
	var out []*jsonSchema
	if len(s.Properties) > 0 {
		out = append(out, s)
	}
	if len(s.Items) > 0 {
		var one jsonSchema
		var many []*jsonSchema
		if json.Unmarshal(s.Items, &one) == nil {
			out = append(out, one.flatten()...)
		} else if json.Unmarshal(s.Items, &many) == nil {
			for _, m := range many {
				if m != nil {
					out = append(out, m.flatten()...)
				}
			}
		}
	}
	for _, alt := range slices.Concat(s.AnyOf, s.OneOf) {
		if alt != nil {
			out = append(out, alt.flatten()...)
		}
	}
	return out
}

// flatten returns s when it has properties, else its own children.
func (s *jsonSchema) flatten() []*jsonSchema {
	if len(s.Properties) > 0 {
		return []*jsonSchema{s}
	}
	if len(s.Items) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		return s.children()
	}
	return nil
}

// describe joins a property's description, title and enum values.
func describe(p *jsonSchema) string {
	parts := make([]string, 0, 2+len(p.Enum))
	if p.Title != "" {
		parts = append(parts, p.Title)
	}
	if p.Description != "" {
		parts = append(parts, p.Description)
	}
	enum := p.Enum
	if len(p.Items) > 0 {
		// An array of enumerated strings: the values name what it selects.
		var items jsonSchema
		if json.Unmarshal(p.Items, &items) == nil {
			enum = append(slices.Clip(enum), items.Enum...)
		}
	}
	for _, e := range enum {
		if e != nil {
			parts = append(parts, fmt.Sprint(e))
		}
	}
	return strings.Join(parts, " ")
}
