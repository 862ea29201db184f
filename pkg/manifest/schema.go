package manifest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed manifest.schema.json
var schemaJSON []byte

// schemaURL is the schema's own $id. The compiler only ever sees this one in-memory resource.
const schemaURL = "https://skillhost.dev/schema/manifest-v1.json"

// errNoLoad is what the compiler gets for any URL it tries to fetch: the manifest schema is
// self-contained, and a schema that could reach files or the network would be a hole.
var errNoLoad = errors.New("manifest schema: loading external URLs is disabled")

var compiled struct {
	once   sync.Once
	schema *jsonschema.Schema
	raw    any // the schema document, walked to word messages and to list unknown fields
	err    error
}

// manifestSchema compiles the embedded schema once. A failure is a bug in this package, and
// is reported through every Parse rather than a panic at init, so the daemon still starts and
// says what is wrong.
func manifestSchema() (*jsonschema.Schema, any, error) {
	compiled.once.Do(func() {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.LoadURL = func(string) (io.ReadCloser, error) { return nil, errNoLoad }
		if err := c.AddResource(schemaURL, bytes.NewReader(schemaJSON)); err != nil {
			compiled.err = fmt.Errorf("manifest schema: %w", err)
			return
		}
		s, err := c.Compile(schemaURL)
		if err != nil {
			compiled.err = fmt.Errorf("manifest schema: %w", err)
			return
		}
		if err := json.Unmarshal(schemaJSON, &compiled.raw); err != nil {
			compiled.err = fmt.Errorf("manifest schema: %w", err)
			return
		}
		compiled.schema = s
	})
	return compiled.schema, compiled.raw, compiled.err
}

// schemaProblems validates doc (decoded with UseNumber) and turns the error tree into one
// Problem per leaf cause. Inner nodes only say "a child failed", which is noise to a user.
func schemaProblems(doc any) Problems {
	s, raw, err := manifestSchema()
	if err != nil {
		return Problems{{Path: "$", Message: err.Error()}}
	}
	err = s.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Problems{{Path: "$", Message: "schema validation failed: " + err.Error()}}
	}
	var ps Problems
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			ps = append(ps, leafProblems(e, doc, raw)...)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return dedupe(ps)
}

// leafProblems words one leaf validation error. The library's own messages do not quote the
// offending value and speak in schema terms; users need the value and the rule in plain words.
func leafProblems(e *jsonschema.ValidationError, doc, raw any) Problems {
	inst := splitPointer(e.InstanceLocation)
	value, _ := lookup(doc, inst)
	path := jsonPath(doc, inst)

	kwPtr := e.AbsoluteKeywordLocation
	if i := strings.IndexByte(kwPtr, '#'); i >= 0 {
		kwPtr = kwPtr[i+1:]
	}
	kw := splitPointer(kwPtr)
	if len(kw) == 0 {
		return Problems{{Path: path, Message: e.Message}}
	}
	keyword := kw[len(kw)-1]
	node, _ := lookup(raw, kw[:len(kw)-1])
	sch, _ := node.(map[string]any)
	hint := ""
	if h, ok := sch["x-hint"].(string); ok {
		hint = " (" + h + ")"
	}

	// propertyNames errors are located at the key's own path, but the thing that failed is
	// the key, not its value.
	if slices.Contains(kw, "propertyNames") && len(inst) > 0 {
		key := inst[len(inst)-1]
		return Problems{{Path: path, Message: "key " + describeString(key, sch, keyword) + hint}}
	}

	switch keyword {
	case "additionalProperties":
		obj, _ := value.(map[string]any)
		known, _ := sch["properties"].(map[string]any)
		var ps Problems
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if _, ok := known[k]; !ok {
				ps = append(ps, Problem{Path: jsonPath(doc, child(inst, k)), Message: "unknown field" + suggest(k, known)})
			}
		}
		if len(ps) > 0 {
			return ps
		}
	case "required":
		obj, _ := value.(map[string]any)
		req, _ := sch["required"].([]any)
		var ps Problems
		for _, r := range req {
			k, _ := r.(string)
			if _, ok := obj[k]; !ok {
				ps = append(ps, Problem{Path: jsonPath(doc, child(inst, k)), Message: "is required but missing"})
			}
		}
		if len(ps) > 0 {
			return ps
		}
	case "type":
		return Problems{{Path: path, Message: fmt.Sprintf("must be %s, not %s", article(fmt.Sprint(sch["type"])), describeType(value))}}
	case "const":
		return Problems{{Path: path, Message: fmt.Sprintf("must be %s, not %s%s", jsonText(sch["const"]), jsonText(value), hint)}}
	case "minimum", "maximum":
		word := "under the minimum"
		if keyword == "maximum" {
			word, hint = "over the maximum", ""
		}
		return Problems{{Path: path, Message: fmt.Sprintf("%s is %s %s%s", jsonText(value), word, jsonText(sch[keyword]), hint)}}
	case "minItems", "maxItems":
		arr, _ := value.([]any)
		return Problems{{Path: path, Message: fmt.Sprintf("has %d items, the %s is %s", len(arr), strings.TrimSuffix(keyword, "Items")+"imum", jsonText(sch[keyword]))}}
	case "maxProperties":
		obj, _ := value.(map[string]any)
		return Problems{{Path: path, Message: fmt.Sprintf("has %d entries, the maximum is %s", len(obj), jsonText(sch[keyword]))}}
	case "uniqueItems":
		arr, _ := value.([]any)
		for j := range arr {
			for i := 0; i < j; i++ {
				if jsonText(arr[i]) == jsonText(arr[j]) {
					return Problems{{Path: jsonPath(doc, child(inst, strconv.Itoa(j))), Message: fmt.Sprintf("%s repeats %s", jsonText(arr[j]), jsonPath(doc, child(inst, strconv.Itoa(i))))}}
				}
			}
		}
	case "pattern", "minLength", "maxLength":
		if str, ok := value.(string); ok {
			if str == "" && keyword == "pattern" && sch["minLength"] != nil {
				return nil // "must not be empty" from minLength says it better
			}
			if keyword != "pattern" {
				hint = ""
			}
			return Problems{{Path: path, Message: describeString(str, sch, keyword) + hint}}
		}
	}
	return Problems{{Path: path, Message: e.Message}}
}

// describeString words a failed string rule, quoting the string so invisible mistakes
// (a trailing space, a capital letter) become visible.
func describeString(s string, sch map[string]any, keyword string) string {
	n := utf8.RuneCountInString(s)
	switch keyword {
	case "minLength":
		if n == 0 {
			return "must not be empty"
		}
		return fmt.Sprintf("%s is %d characters, the minimum is %s", quoteTrunc(s), n, jsonText(sch[keyword]))
	case "maxLength":
		return fmt.Sprintf("%s is %d characters, the maximum is %s", quoteTrunc(s), n, jsonText(sch[keyword]))
	case "pattern":
		if sch["pattern"] == `\S` {
			return "is blank"
		}
		return fmt.Sprintf("%s does not match %s", quoteTrunc(s), sch["pattern"])
	}
	return quoteTrunc(s) + " is not allowed"
}

// quoteTrunc quotes s, cut short so a 2000-character description does not flood the output.
func quoteTrunc(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:max])) + "…"
}

func describeType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + v.String()
	case string:
		return "the string " + quoteTrunc(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	}
	return "a " + t
}

// jsonText renders a small JSON value for a message.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return quoteTrunc(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// suggest offers the known field closest to an unknown one, because the usual unknown field
// is a typo ("timeout" for "timeout_ms", "sha" for "sha256").
func suggest(k string, known map[string]any) string {
	best, bestD := "", 1<<30
	for name := range known {
		d := editDistance(strings.ToLower(k), name)
		if d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	if best == "" || bestD > max(2, len(best)/2) {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 30
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// splitPointer splits a JSON pointer as the validator writes it (RFC 6901 tokens, then
// URL path-escaped) into plain tokens.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		if u, err := url.PathUnescape(s); err == nil {
			s = u
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

func lookup(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jsonPath turns pointer tokens into the "$.limits.timeout_ms" / "$.tags[0]" form people
// read; the document is consulted to tell array indexes from object keys that look numeric.
func jsonPath(doc any, tokens []string) string {
	var b strings.Builder
	b.WriteString("$")
	v := doc
	for _, t := range tokens {
		if arr, ok := v.([]any); ok {
			b.WriteString("[" + t + "]")
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(arr) {
				v = arr[i]
			} else {
				v = nil
			}
			continue
		}
		b.WriteString(member(t))
		if m, ok := v.(map[string]any); ok {
			v = m[t]
		} else {
			v = nil
		}
	}
	return b.String()
}

// child returns the pointer of a member of inst without aliasing inst's backing array.
func child(inst []string, tok string) []string {
	return append(inst[:len(inst):len(inst)], tok)
}

// dedupe drops repeated problems and sorts the rest by path, so output is stable across runs
// (the validator walks maps in random order).
func dedupe(ps Problems) Problems {
	seen := make(map[Problem]bool, len(ps))
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}
