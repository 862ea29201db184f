package skillmd

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v4"
)

// nameRE is the specification's name rule: lowercase letters, digits and single hyphens
// between them. It is narrower than the binary skills' rule (no "_", and a digit may lead).
var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// knownFields are the front matter fields of the specification.
var knownFields = []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

// maxExtraDepth and maxExtraNodes bound how much of the unknown fields' values is copied into
// Extra: YAML aliases can make a small front matter stand for a huge value.
const (
	maxExtraDepth = 8
	maxExtraNodes = 10_000
)

// Parse decodes and judges SKILL.md bytes on their own: the front matter between the first two
// "---" lines, by the specification's rules, and the Markdown body after it. It reports every
// problem at once, each at its line and field, with File set to SKILL.md. It never touches the
// filesystem, so it is safe on untrusted bytes and cheap enough to fuzz. The folder checks (the
// name against the folder, versions, files) are Load's.
//
// The Document is returned whenever the front matter is a YAML mapping, even with problems, so
// callers can show what it claims; trust it only when Problems.Err is nil.
//
// Leniency, as the specification's guide for clients asks: a UTF-8 byte order mark, CRLF
// line ends and blank lines before the opening "---" are accepted; a top-level value with an unquoted ": " (invalid YAML that other
// clients' parsers accept) is read as if quoted, with a warning; a name that breaks the naming
// rule, an unknown field, an over-long description or compatibility, and a license, metadata
// entry or allowed-tools entry of the wrong type are warnings. Missing or empty name or
// description, front matter that is not a mapping, duplicate keys (which value would count is
// anyone's guess), invalid UTF-8 and a file over MaxSkillMDBytes are errors.
func Parse(data []byte) (*Document, Problems) {
	d, ps, _ := parse(data)
	return d, ps
}

// parse is Parse that also says whether the bytes look like a file still being written.
func parse(data []byte) (doc *Document, ps Problems, incomplete bool) {
	p := &parser{}
	doc, incomplete = p.run(data)
	return doc, p.ps, incomplete
}

type parser struct {
	ps Problems
	// opening is the line of SKILL.md holding the opening "---" (after any blank lines).
	opening int
}

func (p *parser) bad(line int, field, format string, args ...any) {
	p.ps = append(p.ps, Problem{File: FileName, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *parser) warn(line int, field, format string, args ...any) {
	p.ps = append(p.ps, Problem{File: FileName, Line: line, Field: field, Message: fmt.Sprintf(format, args...), Warning: true})
}

func (p *parser) run(data []byte) (*Document, bool) {
	if len(data) > MaxSkillMDBytes {
		p.bad(0, "", "is %d bytes, over the %d-byte limit", len(data), MaxSkillMDBytes)
		return nil, false
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		p.bad(0, "", "is empty: the copy may be incomplete")
		return nil, true
	}
	if !utf8.Valid(data) {
		p.bad(invalidUTF8Line(data), "", "is not valid UTF-8 text")
		return nil, false
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.SplitAfter(text, "\n")
	open := 0
	for strings.TrimSpace(lines[open]) == "" { // blank lines before the front matter are let go
		open++
	}
	p.opening = open + 1
	if !isFence(lines[open]) {
		p.bad(open+1, "", "does not start with front matter: the first line must be \"---\", then YAML with at least name and description, then a line \"---\"")
		return nil, false
	}
	end := -1
	for i := open + 1; i < len(lines); i++ {
		if isFence(lines[i]) {
			end = i
			break
		}
	}
	if end < 0 {
		p.bad(open+1, "", "the front matter opened here is never closed by a line \"---\": the copy may be incomplete")
		return nil, true
	}
	front := strings.Join(lines[open+1:end], "")
	body := strings.TrimSpace(strings.Join(lines[end+1:], ""))

	root, ok := p.yaml(front)
	if !ok {
		return nil, false
	}
	doc := &Document{Body: body}
	p.fields(root, &doc.Frontmatter)
	if body == "" {
		p.warn(end+1, "", "has no instructions after the front matter")
	}
	return doc, false
}

// isFence reports a front matter delimiter line: "---" and nothing but trailing blanks.
func isFence(line string) bool {
	return strings.TrimRight(line, " \t\r\n") == "---"
}

// line turns a line of the front matter, as YAML counts them, into a line of SKILL.md.
func (p *parser) line(yamlLine int) int { return yamlLine + p.opening }

// yaml parses the front matter into its root mapping (nil for an empty front matter, which the
// field checks then find without a name and a description).
func (p *parser) yaml(front string) (*yaml.Node, bool) {
	var doc yaml.Node
	err := yaml.Unmarshal([]byte(front), &doc)
	if err != nil {
		quoted, lines := quoteColonValues(front)
		var retry yaml.Node
		if len(lines) == 0 || yaml.Unmarshal([]byte(quoted), &retry) != nil {
			line, msg := 0, err.Error()
			var pe *yaml.ParserError
			if errors.As(err, &pe) {
				msg = pe.Message
				if pe.Line > 0 {
					line = p.line(pe.Line)
				}
			}
			p.bad(line, "", "front matter is not valid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
			return nil, false
		}
		for _, l := range lines {
			p.warn(p.line(l), "", "this value holds \": \" unquoted, which is not valid YAML; it was read as one quoted string, as other clients do; put it in quotes")
		}
		doc = retry
	}
	if len(doc.Content) == 0 {
		return nil, true
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		p.bad(p.line(root.Line), "", "front matter must be a YAML mapping (name: …, description: …), not %s", kindName(root))
		return nil, false
	}
	return root, true
}

// plainColonRE finds a top-level "key: value" line whose value is a plain scalar holding ": ".
var plainColonRE = regexp.MustCompile(`^([A-Za-z0-9_-]+):[ \t]+([^ \t"'|>\[{&*!%@#` + "`" + `].*: .*?)[ \t]*$`)

// quoteColonValues rewrites top-level plain values that hold ": " as single-quoted strings,
// the fallback the specification's client guide suggests for front matter written for
// parsers that accept it. It returns the rewritten text and the 1-based lines it changed.
func quoteColonValues(front string) (string, []int) {
	lines := strings.Split(front, "\n")
	var changed []int
	for i, l := range lines {
		m := plainColonRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		lines[i] = m[1] + ": '" + strings.ReplaceAll(m[2], "'", "''") + "'"
		changed = append(changed, i+1)
	}
	return strings.Join(lines, "\n"), changed
}

// fields reads the root mapping into fm, judging each field.
func (p *parser) fields(root *yaml.Node, fm *Frontmatter) {
	seen := map[string]int{}
	budget := maxExtraNodes
	var content []*yaml.Node
	if root != nil {
		content = root.Content
	}
	for i := 0; i+1 < len(content); i += 2 {
		k, v := deref(content[i]), deref(content[i+1])
		line := p.line(k.Line)
		if k.Kind != yaml.ScalarNode {
			p.bad(line, "", "a front matter key must be a plain string, not %s", kindName(k))
			continue
		}
		key := k.Value
		if prev, dup := seen[key]; dup {
			p.bad(line, key, "is given twice (first on line %d); which one counts is ambiguous, so remove one", prev)
			continue
		}
		seen[key] = line
		switch key {
		case "name":
			if s, ok := p.str(v, key, true); ok {
				fm.Name = s
				for _, msg := range nameProblems(s) {
					p.warn(line, key, "%s; the skill is served under its folder name", msg)
				}
			}
		case "description":
			if s, ok := p.str(v, key, true); ok {
				fm.Description = s
				p.description(line, s)
			}
		case "license":
			if s, ok := p.str(v, key, false); ok {
				fm.License = s
			}
		case "compatibility":
			if s, ok := p.str(v, key, false); ok {
				fm.Compatibility = s
				switch n := utf8.RuneCountInString(s); {
				case strings.TrimSpace(s) == "":
					p.warn(line, key, "is empty; leave it out when the skill has no special requirements")
				case n > MaxCompatibilityLen:
					p.warn(line, key, "is %d characters, over the specification's %d", n, MaxCompatibilityLen)
				}
			}
		case "metadata":
			fm.Metadata = p.metadata(v)
		case "allowed-tools":
			fm.AllowedTools = p.allowedTools(v)
		default:
			if fm.Extra == nil {
				fm.Extra = map[string]any{}
			}
			fm.Extra[key] = toAny(v, 0, &budget)
			p.warn(line, key, "is not a field of the Agent Skills specification; it is kept but not used%s", unknownHint(key))
		}
	}
	for _, req := range []string{"name", "description"} {
		if _, ok := seen[req]; !ok {
			line := p.line(1)
			if root != nil {
				line = p.line(root.Line)
			}
			p.bad(line, req, "is required but missing")
		}
	}
}

// str reads a scalar field. required fields that are not scalars are errors; optional ones are
// ignored with a warning.
func (p *parser) str(v *yaml.Node, field string, required bool) (string, bool) {
	line := p.line(v.Line)
	if v.Kind != yaml.ScalarNode {
		if required {
			p.bad(line, field, "must be a string, not %s", kindName(v))
		} else {
			p.warn(line, field, "must be a string, not %s; ignored", kindName(v))
		}
		return "", false
	}
	if required && strings.TrimSpace(v.Value) == "" {
		what := "the folder name identifies the skill, but the specification requires a name"
		if field == "description" {
			what = "a skill without a description cannot be offered to a model"
		}
		p.bad(line, field, "is empty; %s", what)
		return "", false
	}
	return v.Value, true
}

func (p *parser) description(line int, s string) {
	if n := utf8.RuneCountInString(s); n > MaxDescriptionLen {
		p.warn(line, "description", "is %d characters, over the specification's %d; catalogs show the first %d (Document.CatalogDescription)", n, MaxDescriptionLen, MaxDescriptionLen)
	}
}

func (p *parser) metadata(v *yaml.Node) map[string]string {
	line := p.line(v.Line)
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.warn(line, "metadata", "must be a mapping of strings to strings, not %s; ignored", kindName(v))
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := deref(v.Content[i]), deref(v.Content[i+1])
		kl := p.line(k.Line)
		if k.Kind != yaml.ScalarNode {
			p.warn(kl, "metadata", "a key must be a string, not %s; ignored", kindName(k))
			continue
		}
		field := "metadata." + k.Value
		if prev, dup := seen[k.Value]; dup {
			p.bad(kl, field, "is given twice (first on line %d); which one counts is ambiguous, so remove one", prev)
			continue
		}
		seen[k.Value] = kl
		if val.Kind != yaml.ScalarNode {
			p.warn(p.line(val.Line), field, "must be a string, not %s; ignored", kindName(val))
			continue
		}
		// The scalar's text as written: "version: 1.10" stays "1.10", not the number 1.1.
		out[k.Value] = val.Value
	}
	return out
}

func (p *parser) allowedTools(v *yaml.Node) []string {
	line := p.line(v.Line)
	switch v.Kind {
	case yaml.ScalarNode:
		return splitTools(v.Value)
	case yaml.SequenceNode:
		var out []string
		for i, it := range v.Content {
			it = deref(it)
			if it.Kind != yaml.ScalarNode {
				p.warn(p.line(it.Line), fmt.Sprintf("allowed-tools[%d]", i), "must be a string, not %s; ignored", kindName(it))
				continue
			}
			if s := strings.TrimSpace(it.Value); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	p.warn(line, "allowed-tools", "must be a space-separated string or a list of strings, not %s; ignored", kindName(v))
	return nil
}

// splitTools splits an allowed-tools string on blanks, as the specification says, and on
// commas, as some clients write it ("Read, Grep"), but not inside parentheses, where a
// pattern may hold both ("Bash(git add:*)").
func splitTools(s string) []string {
	var out []string
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// nameProblems returns every way name breaks the specification's naming rule.
func nameProblems(name string) []string {
	q := quoteTrunc(name)
	var out []string
	if n := utf8.RuneCountInString(name); n > MaxNameLen {
		out = append(out, fmt.Sprintf("%s is %d characters, over the %d allowed", q, n, MaxNameLen))
	}
	if nameRE.MatchString(name) {
		return out
	}
	switch {
	case name == "":
		out = append(out, "is empty")
	case strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "":
		out = append(out, fmt.Sprintf("%s must be lowercase a-z, 0-9 and hyphens", q))
	case strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
		out = append(out, fmt.Sprintf("%s must not start or end with a hyphen", q))
	case strings.Contains(name, "--"):
		out = append(out, fmt.Sprintf("%s must not contain two hyphens in a row", q))
	}
	return out
}

// unknownHint suggests the field an unknown one was probably meant to be.
func unknownHint(key string) string {
	if key == "version" {
		return ", except as the version of an unversioned folder without metadata.version; the specification's place for it is metadata.version"
	}
	norm := strings.ReplaceAll(strings.ToLower(key), "_", "-")
	if slices.Contains(knownFields, norm) {
		return fmt.Sprintf("; did you mean %q?", norm)
	}
	return ""
}

// deref follows an alias to the node it names. YAML aliases point at anchored nodes, never at
// other aliases, so one step is enough; the loop only guards against a malformed tree.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 4; i++ {
		n = n.Alias
	}
	return n
}

// toAny copies an unknown field's value for Frontmatter.Extra: scalars as their text, lists
// and mappings as []any and map[string]any. budget caps the nodes copied, so aliases cannot
// make a small front matter expand into a large value.
func toAny(n *yaml.Node, depth int, budget *int) any {
	n = deref(n)
	*budget--
	if depth > maxExtraDepth || *budget < 0 {
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil
		}
		return n.Value
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, toAny(c, depth+1, budget))
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode {
				out[k.Value] = toAny(n.Content[i+1], depth+1, budget)
			}
		}
		return out
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
	}
	return "an unusual YAML node"
}

// invalidUTF8Line is the 1-based line of the first byte that is not UTF-8.
func invalidUTF8Line(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return bytes.Count(data[:i], []byte("\n")) + 1
		}
		i += size
	}
	return 0
}

// quoteTrunc quotes s for a message, cut short so a huge value cannot flood a report.
func quoteTrunc(s string) string {
	const max = 80
	if utf8.RuneCountInString(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	r := []rune(s)
	return fmt.Sprintf("%q…", string(r[:max]))
}

// CatalogDescription is the description as a catalog shows it: at most MaxDescriptionLen
// characters, so one over-long description cannot crowd out the others in a model's context.
func (d *Document) CatalogDescription() string {
	s := strings.TrimSpace(d.Description)
	if utf8.RuneCountInString(s) <= MaxDescriptionLen {
		return s
	}
	return string([]rune(s)[:MaxDescriptionLen-1]) + "…"
}
