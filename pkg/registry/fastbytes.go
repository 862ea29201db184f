package registry

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	fastjson "github.com/segmentio/encoding/json"
)

// validBytes reports whether the JSON document b certainly satisfies f,
// reading the bytes in place: no map, no strings, no allocation on the
// common path. It answers for arguments and results alike and is, like
// valid, only trusted to say "valid": false means invalid JSON, a problem,
// or "not sure" (an escape inside a string that a keyword looks at, a
// number checked against an enum, a duplicate key that the decoder would
// resolve), and the caller then decodes and lets jsonschema decide. A
// document it accepts is also well-formed JSON (as encoding/json.Valid
// has it), nested at most maxArgDepth deep.
//
// The profile of 64 callers showed decoding into map[string]any, for the
// arguments and again for the result, as most of the registry's own
// allocations per call.
//
// A small document is checked in the same pass (see validJSON). A large
// one is checked first by segmentio's validator, which is vectorized (4 us
// for a 64 KiB result): the walk then skips strings with bytes.IndexByte
// instead of looking at each byte, which a 64 KiB result showed costs a
// tenth of a call.
func (f *fastSchema) validBytes(b []byte) bool {
	p := byteParser{b: b, depthCap: maxArgDepth, strict: len(b) <= smallJSON}
	if !p.strict && !fastjson.Valid(b) {
		return false
	}
	return p.document(f)
}

// smallJSON is the size up to which a document is checked byte by byte in
// one pass rather than by segmentio's vectorized validator, whose setup
// dominates a small document: 370 ns for a 41-byte result against 270 ns
// for encoding/json.Valid on the benchmark machine, and 31 % of the
// registry's own work per call (BenchmarkInvokeOverhead's profile).
const smallJSON = 512

// validJSON reports whether b is one well-formed JSON value, exactly as
// encoding/json.Valid does (FuzzValidJSON holds them to it): byte by byte
// for a small document, segmentio's vectorized validator for a larger one.
func validJSON(b []byte) bool {
	if len(b) > smallJSON {
		return fastjson.Valid(b)
	}
	p := byteParser{b: b, depthCap: len(b) + 1, strict: true}
	return p.document(nil)
}

// byteParser walks one JSON document; i is the next unread byte. A strict
// parser checks every byte of a string; otherwise the document is known to
// be well formed and strings are skipped to their closing quote.
type byteParser struct {
	b        []byte
	i        int
	depthCap int // values nested this deep are refused
	strict   bool
}

// document checks that the whole of p.b is one value that f accepts,
// surrounded by nothing but white space.
func (p *byteParser) document(f *fastSchema) bool {
	p.space()
	if !p.value(f, 0) {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

func (p *byteParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value checks the value at p.i against f; a nil f accepts any well-formed
// value (a property the schema does not describe).
func (p *byteParser) value(f *fastSchema, depth int) bool {
	if p.i >= len(p.b) || depth >= p.depthCap {
		return false // for arguments: as deep as decodeJSON allows, and not one level more
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(f, depth)
	case c == '[':
		return p.array(f, depth)
	case c == '"':
		s, ok := p.str()
		if !ok || f == nil {
			return ok
		}
		if f.typ != "" && f.typ != "string" {
			return false
		}
		if f.enum == nil && f.minLen <= 0 && f.maxLen < 0 {
			return true // any well-formed string: no pass over its bytes (a 64 KiB result is one string)
		}
		if hasEscape(s) || !utf8.Valid(s) {
			return false // the decoded length or value is what counts: not sure
		}
		if f.enum != nil && !enumHasBytes(f.enum, s) {
			return false
		}
		if f.minLen > 0 || f.maxLen >= 0 {
			n := utf8.RuneCount(s)
			return n >= f.minLen && (f.maxLen < 0 || n <= f.maxLen)
		}
		return true
	case c == 't' || c == 'f':
		lit := "false"
		if c == 't' {
			lit = "true"
		}
		if !p.literal(lit) {
			return false
		}
		return f == nil || f.valid(c == 't')
	case c == 'n':
		return p.literal("null") && (f == nil || f.valid(nil))
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		if !p.number() {
			return false
		}
		if f == nil {
			return true
		}
		num := p.b[start:p.i]
		switch f.typ {
		case "", "number":
		case "integer":
			for _, d := range num {
				if d == '.' || d == 'e' || d == 'E' {
					return false // 1.0 is an integer to JSON Schema; let it decide
				}
			}
		default:
			return false
		}
		if f.enum == nil && f.min == nil && f.max == nil && f.xmin == nil && f.xmax == nil {
			return true
		}
		return f.valid(json.Number(num)) // bounds or an enum: the decoded path's rules
	}
	return false
}

func (p *byteParser) object(f *fastSchema, depth int) bool {
	if f != nil && f.typ != "" && f.typ != "object" {
		return false
	}
	if f != nil && f.enum != nil {
		return false // an enum holds scalars only (compileFast), so no object is in it
	}
	if f != nil && len(f.required) > 64 {
		return false // beyond the bitmask: not sure
	}
	var seen uint64 // bit k: f.required[k] was present
	var keys int
	p.i++ // '{'
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return f == nil || len(f.required) == 0
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false
		}
		key, ok := p.str()
		if !ok || (f != nil && hasEscape(key)) {
			return false // an escaped key: which property it names is not sure
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		var sub *fastSchema
		if f != nil {
			var known bool
			sub, known = f.props[string(key)]
			if !known && f.closed {
				return false
			}
			for k, r := range f.required {
				if r == string(key) {
					if seen&(1<<k) != 0 {
						return false // a duplicate key: the decoder keeps the last one
					}
					seen |= 1 << k
				}
			}
		}
		if !p.value(sub, depth+1) {
			return false
		}
		keys++
		p.space()
		if p.i >= len(p.b) {
			return false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return f == nil || seen == 1<<len(f.required)-1
		default:
			return false
		}
	}
}

func (p *byteParser) array(f *fastSchema, depth int) bool {
	if f != nil && f.typ != "" && f.typ != "array" {
		return false
	}
	var items *fastSchema
	if f != nil {
		if f.enum != nil {
			return false // arrays in enums are jsonschema's business
		}
		items = f.items
	}
	n := 0
	p.i++ // '['
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
	} else {
		for {
			p.space()
			if !p.value(items, depth+1) {
				return false
			}
			n++
			p.space()
			if p.i >= len(p.b) {
				return false
			}
			if p.b[p.i] == ']' {
				p.i++
				break
			}
			if p.b[p.i] != ',' {
				return false
			}
			p.i++
		}
	}
	return f == nil || (n >= f.minItems && (f.maxItems < 0 || n <= f.maxItems))
}

// str reads a string at p.i and returns its raw contents (between the
// quotes, escapes not undone). Unless the parser is strict, the document is
// known to be well formed, so it only looks for the closing quote.
func (p *byteParser) str() (raw []byte, ok bool) {
	if p.strict {
		return p.strictStr()
	}
	p.i++ // '"'
	start := p.i
	for {
		j := bytes.IndexByte(p.b[p.i:], '"')
		if j < 0 {
			return nil, false
		}
		end := p.i + j
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := end - 1; k >= start && p.b[k] == '\\'; k-- {
			n++
		}
		p.i = end + 1
		if n%2 == 0 {
			return p.b[start:end], true
		}
	}
}

// strictStr is str checking each byte as encoding/json.Valid does: no
// control characters, only JSON's escapes. Like json.Valid it lets bytes
// that are not UTF-8 through; a keyword that looks at a string's contents
// checks them (value).
func (p *byteParser) strictStr() (raw []byte, ok bool) {
	p.i++ // '"'
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			raw = p.b[start:p.i]
			p.i++
			return raw, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return nil, false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if len(p.b)-p.i < 6 {
					return nil, false
				}
				for _, h := range p.b[p.i+2 : p.i+6] {
					if !isHex(h) {
						return nil, false
					}
				}
				p.i += 6
			default:
				return nil, false
			}
		default:
			p.i++
		}
	}
	return nil, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// hasEscape says whether the raw contents of a string hold an escape.
func hasEscape(raw []byte) bool { return bytes.IndexByte(raw, '\\') >= 0 }

func (p *byteParser) literal(lit string) bool {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return false
	}
	p.i += len(lit)
	return true
}

// number reads a number as JSON's grammar has it: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (p *byteParser) number() bool {
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

// digits reads one or more decimal digits.
func (p *byteParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// enumHasBytes is enumHas for a string value given as raw bytes without
// escapes.
func enumHasBytes(enum []any, s []byte) bool {
	for _, e := range enum {
		if ev, ok := e.(string); ok && ev == string(s) {
			return true
		}
	}
	return false
}
