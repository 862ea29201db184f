package skillmd

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestNamedTools(t *testing.T) {
	available := []string{
		"pdf.extract_text", "pdf.fill_form", "pdf.merge", "pdf.search",
		"calc.evaluate", "calc.convert_units", "search.web", "read.file",
	}
	tests := []struct {
		name  string
		front []string
		body  string
		want  []string
	}{
		{"nothing named", nil, "Read the file and answer.", nil},
		{"qualified names in prose", nil, "Call pdf.extract_text first, then calc.evaluate.",
			[]string{"calc.evaluate", "pdf.extract_text"}},
		{"model-facing names", nil, "Use pdf__merge or calc__convert_units.",
			[]string{"calc.convert_units", "pdf.merge"}},
		{"own bare names in code spans", nil, "Run `fill_form` and then `merge(a, b)`.",
			[]string{"pdf.fill_form", "pdf.merge"}},
		{"bare names in prose do not count", nil, "Search the text and merge the results.", nil},
		{"another skill's bare name does not count", nil, "Run `evaluate` on it.", nil},
		{"allowed-tools, either form", []string{"allowed-tools: Read Bash(git:*) pdf.search extract_text calc__evaluate"}, "",
			[]string{"calc.evaluate", "pdf.extract_text", "pdf.search"}},
		{"allowed-tools list", []string{"allowed-tools:", "  - merge()", "  - search.web"}, "",
			[]string{"pdf.merge", "search.web"}},
		{"a longer name is not a shorter one", nil, "Use pdf.extract_text_v2 and xpdf.merge.", nil},
		{"trailing punctuation", nil, "Finish with pdf.merge.", []string{"pdf.merge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = okBody
			}
			doc, ps := Parse([]byte(md(body, append([]string{"name: pdf", "description: d"}, tt.front...)...)))
			if err := ps.Err(); err != nil {
				t.Fatal(err)
			}
			s := Skill{Name: "pdf", Doc: doc}
			if got := s.NamedTools(available); !slices.Equal(got, tt.want) {
				t.Errorf("NamedTools = %q, want %q", got, tt.want)
			}
		})
	}
	if got := (&Skill{Name: "pdf"}).NamedTools(available); got != nil {
		t.Errorf("no document: %q", got)
	}
}

func TestActivationTools(t *testing.T) {
	available := []string{"pdf.extract_text", "pdf.merge", "calc.evaluate"}
	root := t.TempDir()
	tied := filepath.Join(root, "pdf", "1.0.0")
	write(t, tied, "manifest.json", `{"entrypoint": "pdf"}`)
	write(t, tied, "pdf", "binary")

	write(t, tied, "SKILL.md", skillMD("pdf"))
	s := Load(tied, Versioned)
	if got := s.ActivationTools(available); !slices.Equal(got, []string{"pdf.extract_text", "pdf.merge"}) {
		t.Errorf("tied, names none of its own: %q", got)
	}

	write(t, tied, "SKILL.md", md("Use `merge`, then check sums with calc.evaluate.", "name: pdf", "description: d"))
	s = Load(tied, Versioned)
	if got := s.ActivationTools(available); !slices.Equal(got, []string{"calc.evaluate", "pdf.merge"}) {
		t.Errorf("tied, names merge: %q", got)
	}

	write(t, tied, "SKILL.md", md("Check sums with calc.evaluate.", "name: pdf", "description: d"))
	s = Load(tied, Versioned)
	if got := s.ActivationTools(available); !slices.Equal(got, []string{"calc.evaluate", "pdf.extract_text", "pdf.merge"}) {
		t.Errorf("tied, names only another skill's tool: %q", got)
	}

	plain := filepath.Join(root, "notes")
	write(t, plain, "SKILL.md", skillMD("notes"))
	if got := Load(plain, Unversioned).ActivationTools(available); got != nil {
		t.Errorf("instructions only, naming nothing: %q", got)
	}
}
