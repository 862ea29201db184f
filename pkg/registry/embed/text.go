package embed

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/textindex"
)

// toolKey identifies a tool definition: the sha256 of every field the
// embedded text is built from. The same definition under a new version or
// after a reload keeps its key, and so its cached vector.
type toolKey [sha256.Size]byte

// keyOf hashes the qualified name, description, tags and input schema,
// each length-prefixed so that no two definitions share an encoding.
func keyOf(t *registry.Tool) toolKey {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	field := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	field("skillhost-embed-v1")
	field(t.Name)
	field(t.Description)
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(t.Tags)))])
	for _, tag := range t.Tags {
		field(tag)
	}
	field(string(t.InputSchema))
	var k toolKey
	h.Sum(k[:0])
	return k
}

// toolText is what is embedded for a tool: its name as words, its
// description, tags and parameters, the fields a model reads to pick it.
// It must depend on nothing but the fields keyOf hashes.
func toolText(t *registry.Tool, maxRunes int) string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(t.Name))
	b.WriteString(": ")
	b.WriteString(t.Description)
	if len(t.Tags) > 0 {
		b.WriteString("\nTags: ")
		b.WriteString(strings.Join(t.Tags, ", "))
	}
	if params := textindex.ParamsFromSchema(t.InputSchema); len(params) > 0 {
		b.WriteString("\nParameters:")
		for _, p := range params {
			b.WriteString(" ")
			b.WriteString(p.Name)
			if p.Description != "" {
				b.WriteString(" (")
				b.WriteString(p.Description)
				b.WriteString(")")
			}
			b.WriteString(";")
		}
	}
	return cut(b.String(), maxRunes)
}

// cut returns s without newlines (OpenAI advises spaces) and at most
// maxRunes characters long, never splitting a character.
func cut(s string, maxRunes int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	n := 0
	for i := range s {
		if n == maxRunes {
			return s[:i]
		}
		n++
	}
	return s
}
