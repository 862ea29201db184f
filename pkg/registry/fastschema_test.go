package registry

import (
	"encoding/json"
	"strings"
	"testing"
)

// fastSchemas are schemas the fast validator must handle, the way the SDK
// and hand-written tools write them.
var fastSchemas = []string{
	objSchema,
	`{"type":"object","properties":{"expression":{"type":"string","maxLength":10},"angle_unit":{"type":"string","enum":["rad","deg"]}},"required":["expression"],"additionalProperties":false}`,
	`{"type":"object","properties":{"value":{"type":"number","exclusiveMinimum":-273.15,"maximum":1e6},"n":{"type":"integer","minimum":1,"maximum":20},"flag":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string","minLength":1},"maxItems":3}},"additionalProperties":false}`,
	`{"type":"object","properties":{"nested":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},"nothing":{"type":"null"},"any":{}}}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"e":{"enum":[1,"one",true,null]}},"description":"d","title":"t"}`,
	// The SDK's output schemas: a Go slice, map or pointer may encode as null.
	`{"type":"object","properties":{"items":{"type":["array","null"],"items":{"type":"string"}},"next":{"type":["null","string"]},"m":{"type":["object","null"],"properties":{"x":{"type":"integer"}}}},"required":["items"]}`,
}

func TestFastSchemaCompilesOnlyItsSubset(t *testing.T) {
	for _, s := range fastSchemas {
		if compileFast(json.RawMessage(s)) == nil {
			t.Errorf("no fast validator for %s", s)
		}
	}
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`,
		`{"type":["string","number"]}`,
		`{"type":["null","null"]}`,
		`{"type":["string","null","number"]}`,
		`{"type":"object","oneOf":[{},{}]}`,
		`{"type":"object","properties":{"a":true}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","properties":{"a":{"const":1}}}`,
		`{"type":"object","properties":{"a":{"enum":[[1]]}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"type":"object","patternProperties":{"^x":{}}}`,
		`{"type":"array","prefixItems":[{}]}`,
	} {
		if compileFast(json.RawMessage(s)) != nil {
			t.Errorf("fast validator built for a schema beyond its subset: %s", s)
		}
	}
}

// The fast validator may only say "valid" when jsonschema agrees.
func TestFastSchemaNeverMoreLenient(t *testing.T) {
	args := []string{
		`{}`, `{"n":1}`, `{"n":-1}`, `{"n":1.0}`, `{"n":1e2}`, `{"n":"1"}`, `{"n":1,"x":1}`, `{"n":1,"s":null}`,
		`{"expression":"1+1"}`, `{"expression":"12345678901"}`, `{"expression":"一二三四五六七八九十"}`, `{"expression":"x","angle_unit":"grad"}`,
		`{"value":-273.15}`, `{"value":-273.14}`, `{"value":1e7}`, `{"n":0}`, `{"n":21}`, `{"n":20}`, `{"flag":"true"}`,
		`{"tags":["a","b","c","d"]}`, `{"tags":["a",""]}`, `{"tags":["a",1]}`, `{"tags":[]}`,
		`{"nested":{}}`, `{"nested":{"x":1}}`, `{"nested":{"x":1.5}}`, `{"nothing":null}`, `{"nothing":0}`, `{"any":[1,{"a":2}]}`,
		`{"e":1}`, `{"e":1.0}`, `{"e":"one"}`, `{"e":"two"}`, `{"e":null}`, `{"e":false}`, `{"n":12345678901234567890}`,
		`{"e":{}}`, `{"e":{"a":1}}`, `{"e":[]}`, `{"e":[1]}`,
		`{"items":null}`, `{"items":["a"]}`, `{"items":[1]}`, `{"items":null,"next":null}`, `{"items":[],"next":"x"}`,
		`{"items":[],"next":1}`, `{"items":[],"m":null}`, `{"items":[],"m":{"x":"1"}}`, `null`,
	}
	for _, raw := range fastSchemas {
		full, err := compileSchema("skillhost:///test.json", json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		fast := compileFast(json.RawMessage(raw))
		for _, a := range args {
			checkAgreement(t, raw, full.Validate, fast, []byte(a))
		}
	}
}

// checkAgreement checks both fast paths against jsonschema on one
// document: the decoded one (valid) and the one over bytes (validBytes),
// which must also never accept what the decoder refuses.
func checkAgreement(t *testing.T, schema string, full func(any) error, fast *fastSchema, arg []byte) {
	t.Helper()
	onBytes := fast.validBytes(arg)
	v, err := decodeJSON(arg)
	if err != nil {
		if onBytes {
			t.Errorf("validBytes accepts %q, which does not decode: %v", arg, err)
		}
		return
	}
	if fast.valid(v) && full(v) != nil {
		t.Errorf("fast validator accepts %s that jsonschema refuses under %s: %v", arg, schema, full(v))
	}
	if onBytes && full(v) != nil {
		t.Errorf("validBytes accepts %s that jsonschema refuses under %s: %v", arg, schema, full(v))
	}
}

func FuzzFastSchemaNeverMoreLenient(f *testing.F) {
	for _, a := range []string{`{"n":1}`, `{"expression":"x","angle_unit":"deg"}`, `{"tags":["a"]}`, `{"nested":{"x":2}}`, `{"e":1}`, `{"e":{}}`, `{"items":null,"m":null}`} {
		f.Add(a)
	}
	type pair struct {
		raw  string
		full func(any) error
		fast *fastSchema
	}
	var pairs []pair
	for _, raw := range fastSchemas {
		s, err := compileSchema("skillhost:///fuzz.json", json.RawMessage(raw))
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{raw, s.Validate, compileFast(json.RawMessage(raw))})
	}
	f.Fuzz(func(t *testing.T, arg string) {
		for _, p := range pairs {
			checkAgreement(t, p.raw, p.full, p.fast, []byte(arg))
		}
	})
}

// TestFastSchemaNullable checks the verdicts on "type": [T, "null"], the
// form the SDK gives a Go value that may encode as null.
func TestFastSchemaNullable(t *testing.T) {
	f := compileFast(json.RawMessage(`{"type":"object","properties":{"items":{"type":["array","null"],"items":{"type":"string"}}},"required":["items"]}`))
	if f == nil {
		t.Fatal("no fast validator for a nullable array")
	}
	for arg, want := range map[string]bool{
		`{"items":null}`: true, `{"items":["a"]}`: true, `{"items":[1]}`: false, `{"items":"a"}`: false, `{}`: false,
	} {
		v, err := decodeJSON([]byte(arg))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.valid(v); got != want {
			t.Errorf("valid(%s) = %v, want %v", arg, got, want)
		}
	}
}

// TestValidBytes pins validBytes's verdicts: the documents tools really
// get must pass without decoding (or the fast path is dead weight), and
// malformed JSON, problems and the cases it is unsure of must not.
func TestValidBytes(t *testing.T) {
	f := compileFast(json.RawMessage(fastSchemas[2])) // value, n, flag, tags
	g := compileFast(json.RawMessage(fastSchemas[1])) // expression (maxLength 10), angle_unit enum
	any := compileFast(json.RawMessage(`{}`))
	cases := []struct {
		f    *fastSchema
		doc  string
		want bool
	}{
		{f, `{}`, true},
		{f, " {\n\t\"value\" : -1.5e2 , \"n\":3,\"flag\":true,\"tags\":[\"a\",\"b\"] } ", true},
		{f, `{"n":20,"tags":[]}`, true},
		{g, `{"expression":"一二三四五六七八九十"}`, true},
		{g, `{"expression":"x","angle_unit":"deg"}`, true},
		{any, `[1,{"a":[null,false,"\u00e9\n"]},-0.0e+1]`, true},
		{any, `"\ud83d\ude00"`, true},
		{any, `["a\"b", "c\\", "\\\""]`, true},
		{any, `"a\\\"`, false},
		// problems
		{f, `{"n":21}`, false},
		{f, `{"n":1.5}`, false},
		{f, `{"flag":"true"}`, false},
		{f, `{"tags":["a","b","c","d"]}`, false},
		{f, `{"extra":1}`, false},
		{f, `[]`, false},
		{g, `{}`, false},
		{g, `{"expression":"12345678901"}`, false},
		{g, `{"expression":"x","angle_unit":"grad"}`, false},
		// not sure: left to the decoder and jsonschema
		{f, `{"n":1.0}`, false},
		{f, `{"n":1e1}`, false},
		{g, `{"expression":"a\nb"}`, false},
		{g, `{"expr\u0065ssion":"x"}`, false},
		{g, `{"expression":"x","expression":"y"}`, false},
		// malformed
		{any, ``, false},
		{any, `{"a":1,}`, false},
		{any, `{"a" 1}`, false},
		{any, `[1 2]`, false},
		{any, `01`, false},
		{any, `1.`, false},
		{any, `.5`, false},
		{any, `-`, false},
		{any, `1e`, false},
		{any, `+1`, false},
		{any, `tru`, false},
		{any, `nul`, false},
		{any, `"a`, false},
		{any, `"\x"`, false},
		{any, `"\u12g4"`, false},
		{any, "\"a\x01\"", false},
		{any, "\"\xff\"", true},                 // the decoder takes it too, as U+FFFD
		{g, "{\"expression\":\"\xff\"}", false}, // but its length is the decoder's business
		{any, `{} {}`, false},
		{any, strings.Repeat("[", 65) + strings.Repeat("]", 65), false}, // decodeJSON refuses it too
		{any, strings.Repeat("[", 64) + strings.Repeat("]", 64), true},
	}
	for _, c := range cases {
		if got := c.f.validBytes([]byte(c.doc)); got != c.want {
			t.Errorf("validBytes(%q) = %v, want %v", c.doc, got, c.want)
		}
	}
	plain := []byte(`{"value":1,"n":3,"flag":true,"tags":["a"]}`)
	if n := testing.AllocsPerRun(100, func() { f.validBytes(plain) }); n != 0 {
		t.Errorf("validBytes allocates %v times on a plain document", n)
	}
}
