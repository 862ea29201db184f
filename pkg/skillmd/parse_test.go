package skillmd

import (
	"slices"
	"strings"
	"testing"
)

// md builds a SKILL.md from front matter lines and a body.
func md(body string, front ...string) string {
	return "---\n" + strings.Join(front, "\n") + "\n---\n" + body
}

const okBody = "# Steps\n\nDo the thing.\n"

func problemStrings(ps Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestParseRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name string
		in   string
		want []string // every problem, in order, as Problem.String prints it
	}{
		{"minimal", md(okBody, "name: pdf", "description: Reads PDFs."), nil},
		{"all fields", md(okBody, "name: pdf", "description: Reads PDFs.", "license: MIT", "compatibility: Needs python3",
			"metadata:", "  author: me", `  version: "1.0"`, "allowed-tools: Read Bash(git:*)"), nil},

		// name
		{"name missing", md(okBody, "description: d"), []string{
			"SKILL.md:2: front matter: name: is required but missing"}},
		{"name empty", md(okBody, "name: ''", "description: d"), []string{
			"SKILL.md:2: front matter: name: is empty; the folder name identifies the skill, but the specification requires a name"}},
		{"name null", md(okBody, "name:", "description: d"), []string{
			"SKILL.md:2: front matter: name: is empty; the folder name identifies the skill, but the specification requires a name"}},
		{"name uppercase", md(okBody, "name: PDF", "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "PDF" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`}},
		{"name underscore", md(okBody, "name: pdf_tools", "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "pdf_tools" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`}},
		{"name leading hyphen", md(okBody, "name: -pdf", "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "-pdf" must not start or end with a hyphen; the skill is served under its folder name`}},
		{"name trailing hyphen", md(okBody, "name: pdf-", "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "pdf-" must not start or end with a hyphen; the skill is served under its folder name`}},
		{"name double hyphen", md(okBody, "name: pdf--tools", "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "pdf--tools" must not contain two hyphens in a row; the skill is served under its folder name`}},
		{"name 64", md(okBody, "name: "+strings.Repeat("a", 64), "description: d"), nil},
		{"name 65", md(okBody, "name: "+strings.Repeat("a", 65), "description: d"), []string{
			`SKILL.md:2: front matter: name: warning: "` + strings.Repeat("a", 65)[:80-15] + `" is 65 characters, over the 64 allowed; the skill is served under its folder name`}},
		{"name digit first", md(okBody, "name: 3d-models", "description: d"), nil},
		{"name a list", md(okBody, "name: [a, b]", "description: d"), []string{
			"SKILL.md:2: front matter: name: must be a string, not a list"}},

		// description
		{"description missing", md(okBody, "name: pdf"), []string{
			"SKILL.md:2: front matter: description: is required but missing"}},
		{"description blank", md(okBody, "name: pdf", `description: "   "`), []string{
			"SKILL.md:3: front matter: description: is empty; a skill without a description cannot be offered to a model"}},
		{"description a mapping", md(okBody, "name: pdf", "description:", "  what: x"), []string{
			"SKILL.md:4: front matter: description: must be a string, not a mapping"}},
		{"description 1024", md(okBody, "name: pdf", "description: "+long(1024)), nil},
		{"description 1025 characters", md(okBody, "name: pdf", "description: "+strings.Repeat("é", 1025)), []string{
			"SKILL.md:3: front matter: description: warning: is 1025 characters, over the specification's 1024; catalogs show the first 1024 (Document.CatalogDescription)"}},
		{"description folded", md(okBody, "name: pdf", "description: >-", "  Reads PDFs", "  and forms."), nil},

		// optional fields
		{"compatibility 500", md(okBody, "name: pdf", "description: d", "compatibility: "+long(500)), nil},
		{"compatibility 501", md(okBody, "name: pdf", "description: d", "compatibility: "+long(501)), []string{
			"SKILL.md:4: front matter: compatibility: warning: is 501 characters, over the specification's 500"}},
		{"compatibility empty", md(okBody, "name: pdf", "description: d", `compatibility: ""`), []string{
			"SKILL.md:4: front matter: compatibility: warning: is empty; leave it out when the skill has no special requirements"}},
		{"compatibility a list", md(okBody, "name: pdf", "description: d", "compatibility: [claude, cursor]"), []string{
			"SKILL.md:4: front matter: compatibility: warning: must be a string, not a list; ignored"}},
		{"license a mapping", md(okBody, "name: pdf", "description: d", "license: {spdx: MIT}"), []string{
			"SKILL.md:4: front matter: license: warning: must be a string, not a mapping; ignored"}},
		{"metadata a list", md(okBody, "name: pdf", "description: d", "metadata: [a]"), []string{
			"SKILL.md:4: front matter: metadata: warning: must be a mapping of strings to strings, not a list; ignored"}},
		{"metadata nested", md(okBody, "name: pdf", "description: d", "metadata:", "  a: ok", "  b:", "    c: d"), []string{
			"SKILL.md:7: front matter: metadata.b: warning: must be a string, not a mapping; ignored"}},
		{"metadata duplicate", md(okBody, "name: pdf", "description: d", "metadata:", "  a: 1", "  a: 2"), []string{
			"SKILL.md:6: front matter: metadata.a: is given twice (first on line 5); which one counts is ambiguous, so remove one"}},
		{"metadata null", md(okBody, "name: pdf", "description: d", "metadata:"), nil},
		{"allowed-tools list", md(okBody, "name: pdf", "description: d", "allowed-tools:", "  - Read", "  - Bash(git commit:*)"), nil},
		{"allowed-tools bad item", md(okBody, "name: pdf", "description: d", "allowed-tools:", "  - Read", "  - {x: 1}"), []string{
			"SKILL.md:6: front matter: allowed-tools[1]: warning: must be a string, not a mapping; ignored"}},
		{"allowed-tools a mapping", md(okBody, "name: pdf", "description: d", "allowed-tools: {a: b}"), []string{
			"SKILL.md:4: front matter: allowed-tools: warning: must be a space-separated string or a list of strings, not a mapping; ignored"}},

		// unknown and duplicate fields
		{"unknown field", md(okBody, "name: pdf", "description: d", "disable-model-invocation: true"), []string{
			"SKILL.md:4: front matter: disable-model-invocation: warning: is not a field of the Agent Skills specification; it is kept but not used"}},
		{"top-level version", md(okBody, "name: pdf", "description: d", "version: 1.0.0"), []string{
			"SKILL.md:4: front matter: version: warning: is not a field of the Agent Skills specification; it is kept but not used, except as the version of an unversioned folder without metadata.version; the specification's place for it is metadata.version"}},
		{"misspelt field", md(okBody, "name: pdf", "description: d", "allowed_tools: Read"), []string{
			`SKILL.md:4: front matter: allowed_tools: warning: is not a field of the Agent Skills specification; it is kept but not used; did you mean "allowed-tools"?`}},
		{"duplicate key", md(okBody, "name: pdf", "description: d", "name: other"), []string{
			"SKILL.md:4: front matter: name: is given twice (first on line 2); which one counts is ambiguous, so remove one"}},
		{"non-string key", md(okBody, "name: pdf", "description: d", "[a]: b"), []string{
			"SKILL.md:4: a front matter key must be a plain string, not a list"}},

		// the document as a whole
		{"empty", "", []string{"SKILL.md: is empty: the copy may be incomplete"}},
		{"blank", " \n\t\n", []string{"SKILL.md: is empty: the copy may be incomplete"}},
		{"no front matter", "# Title\n", []string{
			`SKILL.md:1: does not start with front matter: the first line must be "---", then YAML with at least name and description, then a line "---"`}},
		{"unclosed", "---\nname: pdf\ndescription: d\n", []string{
			`SKILL.md:1: the front matter opened here is never closed by a line "---": the copy may be incomplete`}},
		{"not a mapping", md(okBody, "- a", "- b"), []string{
			"SKILL.md:2: front matter must be a YAML mapping (name: …, description: …), not a list"}},
		{"a scalar", md(okBody, "just text"), []string{
			"SKILL.md:2: front matter must be a YAML mapping (name: …, description: …), not a str"}},
		{"empty front matter", "---\n---\n" + okBody, []string{
			"SKILL.md:2: front matter: name: is required but missing",
			"SKILL.md:2: front matter: description: is required but missing"}},
		{"bad yaml", md(okBody, "name: pdf", "description: d", "  bad: indent"), []string{
			"SKILL.md:4: front matter is not valid YAML: mapping values are not allowed in this context"}},
		{"tab indent", md(okBody, "name: pdf", "\tdescription: d"), []string{
			"SKILL.md:3: front matter is not valid YAML: found a tab character that violates indentation"}},
		{"invalid utf-8", md(okBody, "name: pdf", "description: \xff"), []string{
			"SKILL.md:3: is not valid UTF-8 text"}},
		{"too large", md(strings.Repeat("x", MaxSkillMDBytes-32), "name: pdf", "description: d"), []string{
			"SKILL.md: is 262145 bytes, over the 262144-byte limit"}},
		{"at the size limit", md(strings.Repeat("x", MaxSkillMDBytes-33), "name: pdf", "description: d"), nil},
		{"no body", md("", "name: pdf", "description: d"), []string{
			"SKILL.md:4: warning: has no instructions after the front matter"}},
		{"every problem at once", md("", "name: PDF--x", "license: [a]", "metadata: x", "colour: blue"), []string{
			`SKILL.md:2: front matter: name: warning: "PDF--x" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`,
			"SKILL.md:3: front matter: license: warning: must be a string, not a list; ignored",
			"SKILL.md:4: front matter: metadata: warning: must be a mapping of strings to strings, not a str; ignored",
			"SKILL.md:5: front matter: colour: warning: is not a field of the Agent Skills specification; it is kept but not used",
			"SKILL.md:2: front matter: description: is required but missing",
			"SKILL.md:6: warning: has no instructions after the front matter"}},

		// leniency
		{"bom and crlf", "\xef\xbb\xbf---\r\nname: pdf\r\ndescription: d\r\n---\r\n" + okBody, nil},
		{"blank lines before the front matter", "\n  \n" + md(okBody, "name: PDF", "description: d"), []string{
			`SKILL.md:4: front matter: name: warning: "PDF" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`}},
		{"text before the front matter", "\n# Title\n" + md(okBody, "name: pdf", "description: d"), []string{
			`SKILL.md:2: does not start with front matter: the first line must be "---", then YAML with at least name and description, then a line "---"`}},
		{"fence with trailing blanks", "--- \nname: pdf\ndescription: d\n---\t\n" + okBody, nil},
		{"unquoted colon", md(okBody, "name: pdf", "description: Use this skill when: the user has a PDF"), []string{
			`SKILL.md:3: warning: this value holds ": " unquoted, which is not valid YAML; it was read as one quoted string, as other clients do; put it in quotes`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := Parse([]byte(tt.in))
			if got := problemStrings(ps); !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	doc, ps := Parse([]byte(md("\n\n# Title\r\n\nBody.\n\n",
		"name: pdf",
		"description: >-",
		"  Reads PDFs",
		"  and forms.",
		"license: Apache-2.0",
		"metadata:",
		"  version: 1.10",
		"  pages: 3",
		"allowed-tools: Read  pdf.extract",
		"x-extra:",
		"  list: [1, two]",
	)))
	if err := ps.Err(); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "pdf" || doc.Description != "Reads PDFs and forms." || doc.License != "Apache-2.0" {
		t.Errorf("fields: %+v", doc.Frontmatter)
	}
	// Scalars keep the text the author wrote: 1.10 is not the number 1.1.
	if doc.Metadata["version"] != "1.10" || doc.Metadata["pages"] != "3" {
		t.Errorf("metadata = %v", doc.Metadata)
	}
	if !slices.Equal(doc.AllowedTools, []string{"Read", "pdf.extract"}) {
		t.Errorf("allowed-tools = %q", doc.AllowedTools)
	}
	if got := doc.Extra["x-extra"].(map[string]any)["list"].([]any); len(got) != 2 || got[0] != "1" || got[1] != "two" {
		t.Errorf("extra = %v", doc.Extra)
	}
	if doc.Body != "# Title\n\nBody." {
		t.Errorf("body = %q", doc.Body)
	}
}

func TestSplitTools(t *testing.T) {
	tests := map[string][]string{
		"Read":                                {"Read"},
		"Bash(git:*) Bash(jq:*) Read":         {"Bash(git:*)", "Bash(jq:*)", "Read"},
		"Read, Grep,Glob":                     {"Read", "Grep", "Glob"},
		"Bash(git add:*), Bash(git status:*)": {"Bash(git add:*)", "Bash(git status:*)"},
		"  a\tb\n c  ":                        {"a", "b", "c"},
		"Bash(unclosed x":                     {"Bash(unclosed x"},
		"a) b":                                {"a)", "b"},
		"":                                    nil,
		" , ,":                                nil,
	}
	for in, want := range tests {
		if got := splitTools(in); !slices.Equal(got, want) {
			t.Errorf("splitTools(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseQuotedFallbackKeepsValue(t *testing.T) {
	doc, _ := Parse([]byte(md(okBody, "name: pdf", "description: Use it when: the user's file is a PDF")))
	if doc == nil || doc.Description != "Use it when: the user's file is a PDF" {
		t.Fatalf("doc = %+v", doc)
	}
}

func TestParseAliasesStayBounded(t *testing.T) {
	// A "billion laughs" in an unknown field: each level refers to the previous one ten times.
	front := []string{"name: pdf", "description: d", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"}
	for i := 1; i < 9; i++ {
		p := "*a" + string(rune('0'+i-1))
		front = append(front, "a"+string(rune('0'+i))+": &a"+string(rune('0'+i))+" ["+strings.Repeat(p+", ", 9)+p+"]")
	}
	doc, ps := Parse([]byte(md(okBody, front...)))
	if doc == nil {
		t.Fatalf("no document: %v", ps)
	}
	if n := countLeaves(doc.Extra); n > maxExtraNodes+100 {
		t.Errorf("extra expanded to %d leaves", n)
	}
}

func countLeaves(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 0
		for _, x := range v {
			n += countLeaves(x)
		}
		return n
	case []any:
		n := 0
		for _, x := range v {
			n += countLeaves(x)
		}
		return n
	}
	return 1
}

func TestCatalogDescription(t *testing.T) {
	d := &Document{Frontmatter: Frontmatter{Description: strings.Repeat("é", 2000)}}
	got := d.CatalogDescription()
	if n := len([]rune(got)); n != MaxDescriptionLen || !strings.HasSuffix(got, "…") {
		t.Errorf("%d runes, suffix %q", n, got[len(got)-3:])
	}
	d.Description = "  short  "
	if got := d.CatalogDescription(); got != "short" {
		t.Errorf("got %q", got)
	}
}

func TestNameProblemsOfFolder(t *testing.T) {
	for _, name := range []string{"pdf", "a", "3d", "pdf-processing", strings.Repeat("a", 64)} {
		if ps := nameProblems(name); len(ps) != 0 {
			t.Errorf("%q: %q", name, ps)
		}
	}
	for _, name := range []string{"", "PDF", "pdf_x", "-a", "a-", "a--b", "a.b", "é", strings.Repeat("a", 65)} {
		if ps := nameProblems(name); len(ps) == 0 {
			t.Errorf("%q passed", name)
		}
	}
}
