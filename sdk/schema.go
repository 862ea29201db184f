package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// reflector turns Go types into inline draft 2020-12 schemas. Definitions are
// expanded in place (no $defs/$ref) because several LLM APIs reject or ignore
// references, and struct schemas close additionalProperties so a model's
// invented fields are rejected by the host before the handler runs.
var reflector = &jsonschema.Reflector{
	DoNotReference: true,
	ExpandedStruct: true,
	Anonymous:      true,
}

// schemaFor returns the JSON Schema of T. The $schema keyword is dropped: the
// host compiles every tool schema as draft 2020-12 anyway.
func schemaFor[T any]() (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	if rt := recursive(t, nil, map[reflect.Type]bool{}); rt != nil {
		// Inlined, its schema would never end: the reflector overflows the
		// stack, which no recover catches.
		return nil, fmt.Errorf("%s contains itself (through %s): recursive types are not supported as tool input or output, because the SDK inlines every schema without $ref", t, rt)
	}
	s := reflector.ReflectFromType(t)
	s.Version = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	return b, nil
}

// outputSchemaFor is the schema of a result type T, made true to what
// encoding/json writes: a nil slice, map or pointer encodes as null, so a
// value of such a type (a field without omitempty, an element, a list that
// is the whole result) may be null, and its type says so ("type": ["array",
// "null"]). Without this a handler returning a nil slice broke its own
// output schema, and MCP clients, which check structuredContent against
// it, refused the result. For the same reason the fields promoted from a
// struct embedded by pointer are not required: a nil pointer leaves them
// out.
func outputSchemaFor[T any]() (json.RawMessage, error) {
	raw, err := schemaFor[T]()
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || raw[0] != '{' {
		// A boolean schema: true, for a json.RawMessage or an interface
		// result, which may be any JSON value, null included.
		return raw, nil
	}
	t := reflect.TypeFor[T]()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	changed := false
	if t.Kind() == reflect.Slice {
		// A nil list of hits is a normal answer. A result that is a map or
		// a struct pointer stays "object": MCP wants an object schema there,
		// and a handler answering a nil one is better told it broke it.
		changed = addNull(m)
	}
	if !allowNull(m, t, 0) && !changed {
		return raw, nil // keep the reflector's key order
	}
	return json.Marshal(m)
}

// customSchema is the reflector's hook for a type that writes its own
// schema; the reflector does not look inside such a type.
type customSchema interface{ JSONSchema() *jsonschema.Schema }

var customSchemaType = reflect.TypeFor[customSchema]()

// recursive returns a struct type that contains itself, through the fields
// and elements the reflector follows from t, or nil. path holds the structs
// being walked; done the ones already found to end.
func recursive(t reflect.Type, path []reflect.Type, done map[reflect.Type]bool) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return recursive(t.Elem(), path, done)
	case reflect.Struct:
	default:
		return nil
	}
	if done[t] || t.Implements(customSchemaType) {
		return nil
	}
	if slices.Contains(path, t) {
		return t
	}
	path = append(path, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" || f.Tag.Get("jsonschema") == "-" {
			continue
		}
		if rt := recursive(f.Type, path, done); rt != nil {
			return rt
		}
	}
	done[t] = true
	return nil
}

// nullable reports whether encoding/json may write a value of t as null.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer, reflect.Interface:
		return true
	}
	return false
}

// addNull lets a schema with one type also be null, and reports whether it
// changed s.
func addNull(s map[string]any) bool {
	if t, ok := s["type"].(string); ok && t != "null" {
		s["type"] = []any{t, "null"}
		return true
	}
	return false
}

// allowNull walks schema s of type t and marks every nested value that may
// encode as null. The reflector inlines every type, so the schema's shape
// follows the Go type's (schemaFor refuses recursive types; depth is a
// last guard). It reports whether it changed anything.
func allowNull(s map[string]any, t reflect.Type, depth int) (changed bool) {
	if depth > 32 {
		return false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	sub := func(key string) (map[string]any, bool) {
		m, ok := s[key].(map[string]any)
		return m, ok
	}
	switch t.Kind() {
	case reflect.Struct:
		props, ok := sub("properties")
		if !ok {
			return false
		}
		fields := jsonFields(t)
		changed = unrequirePromoted(s, fields)
		for _, f := range fields {
			ps, ok := props[f.name].(map[string]any)
			if !ok {
				continue
			}
			if nullable(f.typ) && !f.omitempty && addNull(ps) {
				changed = true
			}
			if allowNull(ps, f.typ, depth+1) {
				changed = true
			}
		}
	case reflect.Slice, reflect.Array:
		if items, ok := sub("items"); ok {
			changed = nullable(t.Elem()) && addNull(items)
			changed = allowNull(items, t.Elem(), depth+1) || changed
		}
	case reflect.Map:
		if vals, ok := sub("additionalProperties"); ok {
			changed = nullable(t.Elem()) && addNull(vals)
			changed = allowNull(vals, t.Elem(), depth+1) || changed
		}
	}
	return changed
}

type jsonField struct {
	name      string
	typ       reflect.Type
	omitempty bool
	// viaPointer: promoted from a struct embedded by pointer, so absent
	// when that pointer is nil. required: jsonschema:"required".
	viaPointer, required bool
}

// unrequirePromoted drops from the required list of struct schema s the
// fields promoted through an embedded pointer: encoding/json leaves them
// out when the pointer is nil. A field tagged jsonschema:"required" stays,
// as the author asked. It reports whether it changed s.
func unrequirePromoted(s map[string]any, fields []jsonField) bool {
	req, ok := s["required"].([]any)
	if !ok {
		return false
	}
	keep := map[string]bool{}
	for _, f := range fields {
		keep[f.name] = keep[f.name] || !f.viaPointer || f.required
	}
	out := slices.DeleteFunc(slices.Clone(req), func(n any) bool {
		name, _ := n.(string)
		k, known := keep[name]
		return known && !k
	})
	if len(out) == len(req) {
		return false
	}
	if len(out) == 0 {
		delete(s, "required")
	} else {
		s["required"] = out
	}
	return true
}

// jsonFields lists the fields encoding/json writes for struct t, with the
// fields of untagged embedded structs promoted, as the reflector (with
// Anonymous and ExpandedStruct) lays them out.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				promoted := jsonFields(ft)
				if f.Type.Kind() == reflect.Pointer {
					for i := range promoted {
						promoted[i].viaPointer = true
					}
				}
				out = append(out, promoted...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		o := strings.Split(opts, ",")
		out = append(out, jsonField{
			name: name, typ: f.Type,
			omitempty: slices.Contains(o, "omitempty") || slices.Contains(o, "omitzero"),
			required:  slices.Contains(strings.Split(f.Tag.Get("jsonschema"), ","), "required"),
		})
	}
	return out
}
