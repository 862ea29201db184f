package registry

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// fastSchema is a validator for the plain object schemas most tools have
// (typed properties, required, additionalProperties, enum, bounds), which
// the profile showed was the largest cost the registry adds to a call:
// jsonschema's general validator took a fifth of the host's CPU per call.
//
// It is only ever trusted to say "valid". When it finds a problem, or meets
// anything it is unsure of, the call falls back to the compiled
// jsonschema.Schema, which decides and words the error; so it may be
// stricter than the full validator but never more lenient, and errors read
// the same either way. A schema that uses any keyword outside this subset
// gets no fast validator at all.
type fastSchema struct {
	typ        string // "", "object", "array", "string", "number", "integer", "boolean", "null"
	nullable   bool   // "type": [typ, "null"]
	props      map[string]*fastSchema
	required   []string
	closed     bool // additionalProperties: false
	items      *fastSchema
	enum       []any
	min, max   *float64
	xmin, xmax *float64 // exclusive bounds
	minLen     int
	maxLen     int // -1: none
	minItems   int
	maxItems   int // -1: none
}

// annotations are keywords that do not affect validity.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
}

// draft2020 is the only $schema a fast validator accepts: another draft
// changes what keywords mean (format asserts in draft 7, say).
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// compileFast returns a fast validator for raw, or nil if the schema uses
// anything it does not handle. ("format" is an annotation in draft 2020-12
// unless assertion is turned on, which the registry does not do.)
func compileFast(raw json.RawMessage) *fastSchema {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return fastFrom(m, 0)
}

func fastFrom(m map[string]any, depth int) *fastSchema {
	if depth > 8 {
		return nil
	}
	f := &fastSchema{maxLen: -1, maxItems: -1}
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				f.typ = t
			case []any:
				// ["array", "null"]: what the SDK writes for a Go value
				// that may encode as null.
				if f.typ, f.nullable = nullableType(t); f.typ == "" {
					return nil
				}
			default:
				return nil
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			f.props = map[string]*fastSchema{}
			for name, ps := range pm {
				psm, ok := ps.(map[string]any)
				if !ok {
					return nil
				}
				sub := fastFrom(psm, depth+1)
				if sub == nil {
					return nil
				}
				f.props[name] = sub
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			f.closed = !b
		case "items":
			im, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if f.items = fastFrom(im, depth+1); f.items == nil {
				return nil
			}
		case "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range list {
				switch e.(type) {
				case string, bool, nil:
				case float64:
				default:
					return nil // objects and arrays in enums: leave to jsonschema
				}
			}
			f.enum = list
		case "$schema":
			if v != draft2020 {
				return nil
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, ok := v.(float64)
			if !ok {
				return nil
			}
			switch k {
			case "minimum":
				f.min = &n
			case "maximum":
				f.max = &n
			case "exclusiveMinimum":
				f.xmin = &n
			default:
				f.xmax = &n
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			n, ok := v.(float64)
			if !ok || n < 0 || n != math.Trunc(n) {
				return nil
			}
			switch k {
			case "minLength":
				f.minLen = int(n)
			case "maxLength":
				f.maxLen = int(n)
			case "minItems":
				f.minItems = int(n)
			default:
				f.maxItems = int(n)
			}
		default:
			if !annotations[k] {
				return nil
			}
		}
	}
	switch f.typ {
	case "", "object", "array", "string", "number", "integer", "boolean", "null":
	default:
		return nil
	}
	return f
}

// valid reports whether v certainly satisfies f. False means "not sure".
func (f *fastSchema) valid(v any) bool {
	if f.enum != nil && !enumHas(f.enum, v) {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		if f.typ != "" && f.typ != "object" {
			return false
		}
		for _, r := range f.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, val := range x {
			p, ok := f.props[k]
			if !ok {
				if f.closed {
					return false
				}
				continue
			}
			if !p.valid(val) {
				return false
			}
		}
		return true
	case []any:
		if f.typ != "" && f.typ != "array" {
			return false
		}
		if len(x) < f.minItems || (f.maxItems >= 0 && len(x) > f.maxItems) {
			return false
		}
		if f.items != nil {
			for _, it := range x {
				if !f.items.valid(it) {
					return false
				}
			}
		}
		return true
	case string:
		if f.typ != "" && f.typ != "string" {
			return false
		}
		if f.minLen > 0 || f.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if n < f.minLen || (f.maxLen >= 0 && n > f.maxLen) {
				return false
			}
		}
		return true
	case json.Number:
		s := string(x)
		switch f.typ {
		case "", "number":
		case "integer":
			if strings.ContainsAny(s, ".eE") {
				return false // 1.0 is an integer to JSON Schema; let it decide
			}
		default:
			return false
		}
		if f.min == nil && f.max == nil && f.xmin == nil && f.xmax == nil {
			return true
		}
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(n, 0) || math.Abs(n) > 1<<53 {
			return false
		}
		return (f.min == nil || n >= *f.min) && (f.max == nil || n <= *f.max) &&
			(f.xmin == nil || n > *f.xmin) && (f.xmax == nil || n < *f.xmax)
	case bool:
		return f.typ == "" || f.typ == "boolean"
	case nil:
		return f.typ == "" || f.typ == "null" || f.nullable
	}
	return false
}

// nullableType reads a type list of one type and "null", in either order;
// it returns "" for any other list.
func nullableType(list []any) (string, bool) {
	if len(list) != 2 {
		return "", false
	}
	a, ok1 := list[0].(string)
	b, ok2 := list[1].(string)
	switch {
	case !ok1 || !ok2 || a == b:
		return "", false
	case b == "null":
		return a, true
	case a == "null":
		return b, true
	}
	return "", false
}

func enumHas(enum []any, v any) bool {
	for _, e := range enum {
		switch ev := e.(type) {
		case string:
			if s, ok := v.(string); ok && s == ev {
				return true
			}
		case bool:
			if b, ok := v.(bool); ok && b == ev {
				return true
			}
		case nil:
			if v == nil {
				return true
			}
		case float64:
			if n, ok := v.(json.Number); ok {
				if f, err := n.Float64(); err == nil && f == ev && !strings.ContainsAny(string(n), "eE") {
					return true
				}
			}
		}
	}
	return false
}
