package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// maxToolNameLen is OpenAI's limit on a function name; the model-facing name of a tool is
// "skill__tool", so the pair has to fit in it.
const maxToolNameLen = 64

// Parse decodes and validates manifest bytes on their own: first the embedded JSON Schema,
// then code checks for what a schema cannot say (strict semver, a confined entrypoint path,
// the length of the model-facing tool names). It reports every problem at once, each with its
// JSON path, because fixing a manifest one error per round trip is miserable. It never touches
// the filesystem, so it is safe on untrusted bytes and cheap enough to fuzz.
//
// The Manifest is returned whenever data is a JSON object, even with problems, so callers can
// show what it claims; trust it only when Problems is empty.
func Parse(data []byte) (*Manifest, Problems) {
	m, ps, _ := parse(data)
	return m, ps
}

// parse is Parse that also says whether the bytes look like a file still being written (empty
// or cut off mid-document), which Load reports as incomplete instead of invalid.
func parse(data []byte) (m *Manifest, ps Problems, truncated bool) {
	if len(data) > MaxManifestBytes {
		return nil, Problems{{Path: "$", Message: fmt.Sprintf("manifest is %d bytes, over the %d-byte limit", len(data), MaxManifestBytes)}}, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Problems{{Path: "$", Message: "manifest is empty: the copy may be incomplete"}}, true
	}
	if p, trunc := prescan(data); p != nil {
		return nil, Problems{*p}, trunc
	}

	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		// prescan accepted the bytes, so this is not expected; report it rather than guess.
		return nil, Problems{{Path: "$", Message: "invalid JSON: " + err.Error()}}, false
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, Problems{{Path: "$", Message: "manifest must be a JSON object, not " + describeType(doc)}}, false
	}

	ps = schemaProblems(doc)

	// Best effort: fields the schema found wrong may not decode, the rest still do, and the
	// partial manifest is useful to show. Type errors are already reported above.
	m = new(Manifest)
	if _, raw, err := manifestSchema(); err == nil {
		if b, err := json.Marshal(exactOnly(obj, raw)); err == nil {
			_ = json.Unmarshal(b, m)
		}
	}

	bad := make(map[string]bool, len(ps))
	for _, p := range ps {
		bad[p.Path] = true
	}
	ps = append(ps, codeChecks(m, obj, bad)...)
	return m, dedupe(ps), false
}

// exactOnly keeps only members whose key is exactly a property of the schema node sch.
// encoding/json matches keys case-insensitively, so without this {"name":"calc","NAME":"x"}
// would decode as "x" while the schema judged "calc".
func exactOnly(obj map[string]any, sch any) map[string]any {
	node, _ := sch.(map[string]any)
	props, _ := node["properties"].(map[string]any)
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		p, ok := props[k]
		if !ok {
			continue
		}
		if o, isObj := v.(map[string]any); isObj {
			if pn, _ := p.(map[string]any); pn["properties"] != nil {
				v = exactOnly(o, p)
			}
		}
		out[k] = v
	}
	return out
}

// codeChecks holds the rules a schema cannot express. Fields that already failed the schema
// are skipped so one mistake is not reported twice.
func codeChecks(m *Manifest, obj map[string]any, bad map[string]bool) Problems {
	var ps Problems
	has := func(key string) bool { _, ok := obj[key]; return ok && !bad["$."+key] }

	if has("version") {
		if _, err := semver.StrictNewVersion(m.Version); err != nil {
			ps = append(ps, Problem{"$.version", fmt.Sprintf("%s is not a strict semantic version (MAJOR.MINOR.PATCH, no leading \"v\"): %v", quoteTrunc(m.Version), err)})
		}
	}
	ps = append(ps, runtimeChecks(m, obj, bad)...)
	if has("entrypoint") {
		if msg := entrypointSyntax(m.Entrypoint); msg != "" {
			ps = append(ps, Problem{"$.entrypoint", msg})
		}
	}
	if has("name") && has("tools") {
		for i, t := range m.Tools {
			p := "$.tools[" + strconv.Itoa(i) + "]"
			if bad[p] {
				continue
			}
			if n := len(m.Name) + 2 + len(t); n > maxToolNameLen {
				ps = append(ps, Problem{p, fmt.Sprintf("the model-facing name %q is %d characters, over the %d-character limit of OpenAI tool names", m.Name+"__"+t, n, maxToolNameLen)})
			}
		}
	}
	if has("uses") {
		ps = append(ps, usesProblems(m.Uses, bad)...)
	}
	if has("env") {
		for _, k := range slices.Sorted(maps.Keys(m.Env)) {
			if strings.IndexByte(m.Env[k], 0) >= 0 {
				ps = append(ps, Problem{jsonPath(obj, []string{"env", k}), "contains a NUL byte, which cannot be passed in a process environment"})
			}
		}
	}
	return ps
}

// runtimeChecks requires the fields of the manifest's runtime and refuses the other
// runtime's, which would otherwise be silently ignored: a go-plugin version runs its
// entrypoint, checked by sha256; an MCP version runs its command, checked by the folder digest.
func runtimeChecks(m *Manifest, obj map[string]any, bad map[string]bool) Problems {
	if bad["$.runtime"] {
		return nil
	}
	need, refuse := []string{"entrypoint", "sha256"}, []string{"command", "args", "digest"}
	rt := m.RuntimeName()
	if rt == RuntimeMCP {
		// An MCP server cannot call hosted tools (sdk.Call is the Go SDK's), so uses is refused.
		need, refuse = []string{"command", "digest"}, append(need, "uses")
	}
	var ps Problems
	for _, k := range need {
		if _, ok := obj[k]; !ok {
			ps = append(ps, Problem{"$." + k, fmt.Sprintf("is required but missing (runtime %q)", rt)})
		}
	}
	for _, k := range refuse {
		if _, ok := obj[k]; ok {
			ps = append(ps, Problem{"$." + k, fmt.Sprintf("is not used by runtime %q; remove it", rt)})
		}
	}
	if rt == RuntimeMCP && !bad["$.command"] && m.Command != "" {
		if msg := commandSyntax(m.Command); msg != "" {
			ps = append(ps, Problem{"$.command", msg})
		}
	}
	if !bad["$.args"] {
		for i, a := range m.Args {
			if strings.IndexByte(a, 0) >= 0 {
				ps = append(ps, Problem{"$.args[" + strconv.Itoa(i) + "]", "contains a NUL byte, which cannot be passed to a process"})
			}
		}
	}
	return ps
}

// usesProblems holds what the schema cannot say about uses: a name that
// no tool could have (over the model-facing length limit), and an entry
// that a "skill.*" entry already covers, which is harmless but says that
// the author thought the list narrower than it is.
func usesProblems(uses []string, bad map[string]bool) Problems {
	var ps Problems
	wild := map[string]bool{}
	for _, u := range uses {
		if s, t, _ := strings.Cut(u, "."); t == "*" {
			wild[s] = true
		}
	}
	for i, u := range uses {
		p := "$.uses[" + strconv.Itoa(i) + "]"
		if bad[p] {
			continue
		}
		s, t, _ := strings.Cut(u, ".")
		switch {
		case len(s) > maxSkillNameLen:
			ps = append(ps, Problem{p, fmt.Sprintf("skill name %q is longer than %d characters: no skill has it", s, maxSkillNameLen)})
		case t != "*" && len(s)+2+len(t) > maxToolNameLen:
			ps = append(ps, Problem{p, fmt.Sprintf("the model-facing name %q is %d characters, over the %d-character limit: no tool has it", s+"__"+t, len(s)+2+len(t), maxToolNameLen)})
		case t != "*" && wild[s]:
			ps = append(ps, Problem{p, fmt.Sprintf("%q is already covered by %q; list one or the other", u, s+".*")})
		}
	}
	return ps
}

// interpNameRE is what an interpreter's logical name looks like (pkg/mcprt's rule): short and
// plain, so that it can never be mistaken for a path.
var interpNameRE = regexp.MustCompile(`^[a-z][a-z0-9._+-]{0,63}$`)

// commandSyntax checks an MCP command as a string: which interpreters the operator allows is
// the host's to know (--runtime), so a bare name is only checked for its form here.
func commandSyntax(c string) string {
	q := quoteTrunc(c)
	switch {
	case strings.IndexByte(c, 0) >= 0:
		return q + " contains a NUL byte"
	case strings.HasPrefix(c, "/"):
		return q + " is an absolute path; name an interpreter the operator allows (--runtime name=/path) or a file inside the version folder (./server)"
	case strings.Contains(c, `\`):
		return q + ` contains "\"; use "/" to separate folders`
	case strings.Contains(c, "/"):
		if msg := entrypointSyntax(c); msg != "" {
			return msg
		}
		return ""
	case !interpNameRE.MatchString(c):
		return q + " is neither an interpreter name (" + interpNameRE.String() + ") nor a path inside the version folder (with a /, as in ./server)"
	}
	return ""
}

// entrypointSyntax checks the entrypoint as a string. Load checks it again against the real
// folder (symlinks); refusing ".." and absolute paths here already stops the obvious escapes
// and lets "host validate" flag them without a folder.
func entrypointSyntax(ep string) string {
	q := quoteTrunc(ep)
	switch {
	case strings.IndexByte(ep, 0) >= 0:
		return q + " contains a NUL byte"
	case strings.HasPrefix(ep, "/"):
		return q + " is an absolute path; it must be relative to the version folder"
	case strings.Contains(ep, `\`):
		return q + ` contains "\"; use "/" to separate folders`
	case strings.HasSuffix(ep, "/"):
		return q + ` ends in "/", so it names a folder, not a file`
	}
	clean := path.Clean(ep)
	switch {
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return q + " escapes the version folder"
	case slices.Contains(strings.Split(ep, "/"), ".."):
		return q + ` contains a ".." element; name the file directly`
	case clean == ".":
		return q + " names the version folder itself, not a file"
	case clean == FileName:
		return q + " is the manifest, not a program"
	}
	return ""
}

// prescan walks the tokens once before decoding, so that syntax errors get a line and column,
// nesting is capped before any recursive decoder sees the document, and duplicate keys are
// refused: with duplicates, which value counts depends on the reader, and a manifest must mean
// one thing. Token-by-token decoding is iterative, so deep input cannot exhaust the stack.
func prescan(data []byte) (p *Problem, truncated bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is valid JSON; the schema, not the scan, says it is too big
	var stack []*scanFrame
	early := &Problem{"$", "invalid JSON: the document ends early: the copy may be incomplete"}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return early, true
			}
			return nil, false
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return early, true
			}
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = se.Offset
			}
			line, col := lineCol(data, off)
			return &Problem{"$", fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, err)}, false
		}
		var top *scanFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				valueDone(stack)
				if len(stack) == 0 {
					return trailing(dec, data), false
				}
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return &Problem{top.path + member(k), "duplicate key; a key may appear only once in an object"}, false
			}
			top.keys[k] = true
			top.key = k
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return &Problem{"$", fmt.Sprintf("JSON is nested more than %d levels deep", maxDepth)}, false
			}
			p := "$"
			if top != nil {
				p = top.childPath()
			}
			obj := tok == json.Delim('{')
			stack = append(stack, &scanFrame{object: obj, wantKey: obj, keys: map[string]bool{}, path: p})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		valueDone(stack)
		if len(stack) == 0 {
			return trailing(dec, data), false
		}
	}
}

// trailing refuses anything after the document: "{...} {...}" is not one manifest.
func trailing(dec *json.Decoder, data []byte) *Problem {
	off := dec.InputOffset()
	if _, err := dec.Token(); err == io.EOF {
		return nil
	}
	line, col := lineCol(data, off)
	return &Problem{"$", fmt.Sprintf("invalid JSON at line %d, column %d: data after the end of the document", line, col)}
}

// scanFrame is one open object or array during prescan.
type scanFrame struct {
	object  bool
	wantKey bool // object: the next token is a key or '}'
	keys    map[string]bool
	path    string // JSON path of this container
	key     string // object: key of the member being read
	index   int    // array: index of the element being read
}

func (f *scanFrame) childPath() string {
	if f.object {
		return f.path + member(f.key)
	}
	return f.path + "[" + strconv.Itoa(f.index) + "]"
}

// valueDone moves the innermost container past the value just read.
func valueDone(stack []*scanFrame) {
	if len(stack) == 0 {
		return
	}
	top := stack[len(stack)-1]
	if top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

// member renders one object key as a JSON path step.
func member(k string) string {
	if identRE.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func lineCol(data []byte, off int64) (line, col int) {
	off = max(0, min(off, int64(len(data))))
	line, col = 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
