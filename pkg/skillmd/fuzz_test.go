package skillmd

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks that no input crashes Parse or makes it report nonsense: every problem has
// a message and names SKILL.md, a document comes back whenever there are no errors, and what
// it holds respects the rules that made it valid.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/skills/*/SKILL.md")
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "---", "---\n---\n", "\xef\xbb\xbf---\r\nname: a\r\ndescription: b\r\n---\r\n",
		"---\nname: a\ndescription: use when: x\n---\nbody",
		"---\nname: [a\n---\n", "---\n- a\n---\n", "---\na: &x [*x]\n---\n",
		"---\nname: a\ndescription: b\nmetadata: {version: 1.10, n: {m: 1}}\nallowed-tools: [a, {b: c}]\n---\nx",
		"---\nname: a\nname: b\n---\n", "---\n? [a]\n: b\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, ps := Parse(data)
		for _, p := range ps {
			if p.Message == "" || p.File != FileName || p.Line < 0 {
				t.Fatalf("bad problem %+v", p)
			}
		}
		if ps.Err() != nil {
			return
		}
		if doc == nil {
			t.Fatalf("no errors and no document: %v", ps)
		}
		if strings.TrimSpace(doc.Name) == "" || strings.TrimSpace(doc.Description) == "" {
			t.Fatalf("valid without name or description: %+v", doc.Frontmatter)
		}
		if !utf8.ValidString(doc.Body) || !utf8.ValidString(doc.CatalogDescription()) {
			t.Fatal("invalid UTF-8 in a valid document")
		}
		if n := utf8.RuneCountInString(doc.CatalogDescription()); n > MaxDescriptionLen {
			t.Fatalf("catalog description is %d characters", n)
		}
		_ = doc.NamedTools(doc.Name, []string{"a.b", doc.Name + ".x"})
	})
}

// FuzzPlainPath checks that every path Open accepts is, by its text alone, a plain path inside
// the folder: local, already clean, with no hidden element. (os.Root then guards the links.)
func FuzzPlainPath(f *testing.F) {
	for _, s := range []string{"a", "a/b.md", "../a", "a/../b", "/a", `a\b`, ".env", "a//b", "", ".", "a/", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !plainPath(p) {
			return
		}
		elems := strings.Split(p, "/")
		if !filepath.IsLocal(p) || path.Clean(p) != p || slices.Contains(elems, "..") ||
			slices.ContainsFunc(elems, func(e string) bool { return strings.HasPrefix(e, ".") || e == "" }) {
			t.Fatalf("plainPath accepted %q", p)
		}
	})
}
