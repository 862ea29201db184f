package skillmd

import (
	"regexp"
	"slices"
	"strings"
)

// wordRE finds tool-name-like words in the body: runs of the characters a qualified tool name
// ("calc.evaluate") or a model-facing one ("calc__evaluate") is made of.
var wordRE = regexp.MustCompile(`[A-Za-z0-9_.-]+`)

// codeSpanRE finds Markdown code spans on one line.
var codeSpanRE = regexp.MustCompile("`([^`\n]+)`")

// NamedTools returns the tools among available that the instructions name, sorted. available
// holds qualified tool names ("skill.tool"), typically every tool the registry serves. A tool
// is named when
//
//   - its qualified name or its model-facing name ("skill__tool") appears in allowed-tools or
//     as a word anywhere in the body, or
//   - it belongs to this skill and its bare name ("tool") appears in allowed-tools or as a
//     Markdown code span in the body (`tool` or `tool()`), since instructions usually call
//     their own tools by the short name; in plain prose a bare name is too likely an ordinary
//     word to count.
//
// Entries of allowed-tools meant for other clients ("Bash(git:*)", "Read") match nothing
// unless a tool of that name is available.
func (s Skill) NamedTools(available []string) []string {
	if s.Doc == nil {
		return nil
	}
	return s.Doc.NamedTools(s.Name, available)
}

// NamedTools is Skill.NamedTools for a parsed document of the skill called skill.
func (d *Document) NamedTools(skill string, available []string) []string {
	words := map[string]bool{} // qualified or model-facing names
	short := map[string]bool{} // bare names, from allowed-tools and code spans
	for _, t := range d.AllowedTools {
		t = strings.TrimSuffix(strings.TrimSpace(t), "()")
		words[t], short[t] = true, true
	}
	for _, w := range wordRE.FindAllString(d.Body, -1) {
		words[strings.TrimRight(w, ".-")] = true
	}
	for _, m := range codeSpanRE.FindAllStringSubmatch(d.Body, -1) {
		span := strings.TrimSpace(m[1])
		if i := strings.IndexByte(span, '('); i >= 0 {
			span = span[:i]
		}
		short[span] = true
	}
	var out []string
	for _, q := range available {
		owner, tool, ok := strings.Cut(q, ".")
		if !ok {
			continue
		}
		if words[q] || words[owner+"__"+tool] || (owner == skill && short[tool]) {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ActivationTools returns the tools activating the skill brings into a run: the ones the
// instructions name (NamedTools) and, for a tied skill whose instructions name none of its own
// tools, all of its own tools, since instructions shipped with a binary are about that binary.
func (s Skill) ActivationTools(available []string) []string {
	named := s.NamedTools(available)
	if !s.Tied || slices.ContainsFunc(named, s.owns) {
		return named
	}
	for _, q := range available {
		if s.owns(q) {
			named = append(named, q)
		}
	}
	slices.Sort(named)
	return slices.Compact(named)
}

func (s Skill) owns(qualified string) bool {
	owner, _, ok := strings.Cut(qualified, ".")
	return ok && owner == s.Name
}
