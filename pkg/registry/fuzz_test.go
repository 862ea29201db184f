package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzSplitName checks the mapping between "skill.tool", "skill__tool" and
// the parts: it never panics, a name it accepts has valid parts, and both
// spellings of those parts map back to them (the property that lets the
// LLM-facing name work without a lookup table).
func FuzzSplitName(f *testing.F) {
	for _, s := range []string{
		"calc.add", "calc__add", "my-skill.do_it", "a.b.c", "a__b__c", "a___b", "a.__b", "__a", "a__",
		".", "..", "../etc/passwd", "calc.evaluate/../x", "CALC.add", "calc.add\x00", "ｃａｌｃ.add",
		"calc.add%2F", strings.Repeat("a", 70) + ".b", "a_b__c_d", "a-__b", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		skill, tool, err := SplitName(name)
		if err != nil {
			if skill != "" || tool != "" {
				t.Fatalf("SplitName(%q) failed but returned parts %q %q", name, skill, tool)
			}
			if !strings.Contains(err.Error(), "tool name") {
				t.Fatalf("SplitName(%q): error does not name the problem: %v", name, err)
			}
			return
		}
		if !ValidName(skill) || !ValidName(tool) {
			t.Fatalf("SplitName(%q) accepted invalid parts %q %q", name, skill, tool)
		}
		if strings.Contains(skill, "__") || strings.Contains(tool, "__") || strings.ContainsAny(skill+tool, "./") {
			t.Fatalf("SplitName(%q) = %q %q: a part holds a separator", name, skill, tool)
		}
		if name != Qualified(skill, tool) && name != LLMName(skill, tool) {
			t.Fatalf("SplitName(%q) = %q %q, which spells neither %q nor %q", name, skill, tool, Qualified(skill, tool), LLMName(skill, tool))
		}
		for _, form := range []string{Qualified(skill, tool), LLMName(skill, tool)} {
			s2, t2, err := SplitName(form)
			if err != nil || s2 != skill || t2 != tool {
				t.Fatalf("round trip of %q via %q = %q %q %v", name, form, s2, t2, err)
			}
		}
	})
}

// fuzzSchema exercises most keywords a skill's schema uses: nested objects,
// arrays, enums, patterns, numeric bounds, combinators and a local $ref.
const fuzzSchema = `{
  "type": "object",
  "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
  "properties": {
    "n":     {"type": "integer", "minimum": 0, "maximum": 1000},
    "s":     {"type": "string", "maxLength": 16, "pattern": "^[a-z]*$"},
    "mode":  {"enum": ["fast", "slow", 3, null]},
    "tags":  {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "p":     {"$ref": "#/$defs/point"},
    "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    "deep":  {"type": "object", "properties": {"deeper": {"type": "object", "additionalProperties": {"type": "boolean"}}}}
  },
  "required": ["n"],
  "additionalProperties": false
}`

// FuzzValidateArguments feeds arbitrary bytes to argument validation against
// a fixed schema: it never panics, every refusal is an *Error with code
// invalid_arguments and a message, problems carry JSON pointers, and what it
// accepts is one JSON object.
func FuzzValidateArguments(f *testing.F) {
	r := New(Config{})
	sp := SkillSpec{Name: "fz", Version: "1.0.0", Description: "fuzz", Backend: &memBackend{},
		Tools: []ToolSpec{{Name: "t", Description: "a tool", InputSchema: json.RawMessage(fuzzSchema)}}}
	if _, err := r.Put(sp); err != nil {
		f.Fatal(err)
	}
	snap := r.Snapshot()
	for _, s := range []string{
		`{"n":1}`, `{"n":1,"s":"abc","mode":"fast","tags":["a"],"p":{"x":1,"y":2},"either":"x","deep":{"deeper":{"a":true}}}`,
		`{}`, `[]`, `null`, `1`, `"x"`, `{"n":-1}`, `{"n":1.5}`, `{"n":1e400}`, `{"n":1} {}`, `{"n":1,}`, `{"n":1,"n":2}`,
		`{"n":1,"s":"\ud800"}`, "{\"n\":1,\"s\":\"\xff\xfe\"}", `{"n":1,"p":{"x":"a"}}`, `{"n":1,"either":1.5}`,
		`{"n":1,"deep":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), `{"n":1,"x":"\"}{"}`, "", " ", "\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		err := snap.ValidateArguments("fz.t", args)
		if err == nil {
			var obj map[string]any
			d := json.NewDecoder(bytes.NewReader(args))
			if d.Decode(&obj) != nil || obj == nil {
				t.Fatalf("accepted %q, which is not a JSON object", args)
			}
			if _, ok := obj["n"]; !ok {
				t.Fatalf("accepted %q without the required n", args)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("ValidateArguments(%q) = %T %v, want *Error", args, err, err)
		}
		if e.Code != CodeInvalidArguments || e.Message == "" {
			t.Fatalf("ValidateArguments(%q) = %s %q, want invalid_arguments with a message", args, e.Code, e.Message)
		}
		if ps, ok := e.Details["problems"].([]ArgumentProblem); ok {
			if len(ps) == 0 || len(ps) > 21 {
				t.Fatalf("%d problems for %q", len(ps), args)
			}
			for _, p := range ps {
				if p.Reason == "" || (p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/")) {
					t.Fatalf("problem %+v for %q: want a reason and a JSON pointer", p, args)
				}
			}
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("error for %q does not encode: %v", args, err)
		}
	})
}

// FuzzValidJSON holds validJSON to encoding/json.Valid: the result check
// must refuse exactly what the reference refuses, or a skill's good
// results would fail as invalid_response (or bad ones would reach
// clients). Inputs over smallJSON exercise segmentio's validator; the
// seeds also push the byte-by-byte path through every escape and
// number form.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, ` {"a" : [ true , false , null ] } `, `{"msg":"hello, skillhost","n":42,"tags":["bench","echo"]}`,
		`"\u00e9\n\t\"\\\/\b\f\r"`, `"\u00zz"`, `"\x"`, "\"a\tb\"", "\"\xff\xfe\"", `"\ud800"`, `[1,]`, `{"a":1,}`,
		`01`, `-0`, `-`, `1.`, `1.5e+10`, `1E-2`, `.5`, `tru`, `nul`, `[[[[[[[[]]]]]]]]`, `{"a":{"b":{"c":[{}]}}}`,
		`"unterminated`, `"esc at end\`, `{"a" 1}`, `[1 2]`, `{"a":1}{}`, "", " ", "\u00a0{}",
		`[` + strings.Repeat(`"x",`, 200) + `"x"]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid says %v", s, got, want)
		}
		// validBytes with a schema that accepts any object never accepts
		// what is not JSON.
		if anyObject.validBytes(b) && !json.Valid(b) {
			t.Fatalf("validBytes accepts %q, which is not JSON", s)
		}
	})
}

var anyObject = compileFast(json.RawMessage(`{"type":"object"}`))
