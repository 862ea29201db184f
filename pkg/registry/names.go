package registry

import (
	"fmt"
	"regexp"
	"strings"
)

// nameRE is the rule for skill and tool names. It forbids "__" inside a name,
// which is what lets the LLM-facing name skill__tool map back to skill.tool
// without a lookup table.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)

// MaxQualifiedName keeps skill__tool within OpenAI's 64-character limit.
const MaxQualifiedName = 64

// ValidName reports whether s is a valid skill or tool name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Qualified returns "skill.tool".
func Qualified(skill, tool string) string { return skill + "." + tool }

// LLMName returns "skill__tool", the name sent to OpenAI-compatible models.
func LLMName(skill, tool string) string { return skill + "__" + tool }

// SplitName accepts either form, "skill.tool" or "skill__tool", and returns
// its parts.
func SplitName(name string) (skill, tool string, err error) {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		skill, tool = name[:i], name[i+1:]
	} else if i := strings.Index(name, "__"); i >= 0 {
		skill, tool = name[:i], name[i+2:]
	} else {
		return "", "", fmt.Errorf("tool name %q is neither skill.tool nor skill__tool", name)
	}
	if !ValidName(skill) || !ValidName(tool) {
		return "", "", fmt.Errorf("tool name %q: skill and tool must match %s", name, nameRE)
	}
	return skill, tool, nil
}
