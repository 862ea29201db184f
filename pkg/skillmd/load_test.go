package skillmd

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScanFixtures(t *testing.T) {
	skills, err := Scan("testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range skills {
		names = append(names, s.Name)
		if s.Status != StatusValid || s.Layout != Unversioned || s.Tied {
			t.Errorf("%s: status %s, layout %d, tied %v: %v", s.Name, s.Status, s.Layout, s.Tied, s.Problems)
		}
		if len(s.Digest) != 64 {
			t.Errorf("%s: digest %q", s.Name, s.Digest)
		}
	}
	if !slices.Equal(names, []string{"brand-guidelines", "changelog-writer", "pdf-processing"}) {
		t.Fatalf("skills = %q", names)
	}
	brand, changelog, pdf := skills[0], skills[1], skills[2]

	// metadata.version "1.2" reads as 1.2.0; no version at all gives a digest pseudo-version.
	if pdf.Version != "1.2.0" || pdf.VersionFrom != VersionFromMetadata {
		t.Errorf("pdf-processing: version %q from %s", pdf.Version, pdf.VersionFrom)
	}
	if want := "0.0.0+sha256." + brand.Digest[:12]; brand.Version != want || brand.VersionFrom != VersionFromDigest {
		t.Errorf("brand-guidelines: version %q from %s, want %q", brand.Version, brand.VersionFrom, want)
	}

	if got, want := paths(pdf), []string{"LICENSE.txt", "SKILL.md", "references/forms.md", "references/reference.md",
		"scripts/extract_tables.py", "scripts/fill_form.py"}; !slices.Equal(got, want) {
		t.Errorf("pdf-processing files = %q, want %q", got, want)
	}
	kinds := map[string]FileKind{}
	for _, f := range pdf.Files {
		kinds[f.Path] = f.Kind
		if !f.Served || f.Size == 0 {
			t.Errorf("%s: served %v, size %d", f.Path, f.Served, f.Size)
		}
		data, err := pdf.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(data); f.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %s does not match its content", f.Path, f.SHA256)
		}
	}
	if kinds["SKILL.md"] != KindInstructions || kinds["scripts/fill_form.py"] != KindScript ||
		kinds["references/forms.md"] != KindReference || kinds["LICENSE.txt"] != KindOther {
		t.Errorf("kinds = %v", kinds)
	}
	if got := paths(brand); !slices.Contains(got, "assets/palette.json") || brand.Files[1].Kind != KindAsset {
		t.Errorf("brand-guidelines files = %q", got)
	}

	// Other clients' fields are kept, with a warning that does not stop the skill.
	if got := warningStrings(changelog); !slices.Equal(got, []string{
		"SKILL.md:4: front matter: argument-hint: warning: is not a field of the Agent Skills specification; it is kept but not used"}) {
		t.Errorf("changelog-writer warnings = %q", got)
	}
	if changelog.Doc.Extra["argument-hint"] != "[from-tag] [to-tag]" {
		t.Errorf("extra = %v", changelog.Doc.Extra)
	}
	if !slices.Equal(changelog.Doc.AllowedTools, []string{"Bash(git log:*)", "Bash(git tag:*)", "Read"}) {
		t.Errorf("allowed-tools = %q", changelog.Doc.AllowedTools)
	}
	if !strings.HasPrefix(pdf.Doc.Body, "# Working with PDF files") {
		t.Errorf("body starts %q", pdf.Doc.Body[:40])
	}
}

func TestScanLayouts(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes/SKILL.md", skillMD("notes"))
	// In an unversioned folder, a subfolder is content even when its name looks like a version.
	write(t, root, "notes/1.0.0/SKILL.md", skillMD("other"))
	write(t, root, "review/1.0.0/SKILL.md", skillMD("review"))
	write(t, root, "review/1.1.0/SKILL.md", skillMD("review"))
	write(t, root, "review/_staging/SKILL.md", skillMD("review"))
	write(t, root, "calc/1.0.0/manifest.json", "{}") // a binary skill: not ours
	write(t, root, ".hidden/SKILL.md", skillMD("hidden"))
	write(t, root, "_tmp/SKILL.md", skillMD("tmp"))
	write(t, root, "README.md", "the tree")

	skills, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range skills {
		got = append(got, s.Name+"@"+s.Version+":"+string(s.Status))
	}
	if want := []string{"notes@0.0.0+sha256." + skills[0].Digest[:12] + ":valid", "review@1.0.0:valid", "review@1.1.0:valid"}; !slices.Equal(got, want) {
		t.Fatalf("scan = %q, want %q", got, want)
	}
	if !slices.Contains(paths(skills[0]), "1.0.0/SKILL.md") {
		t.Errorf("notes files = %q", paths(skills[0]))
	}
	if skills[1].Layout != Versioned || skills[1].VersionFrom != VersionFromFolder {
		t.Errorf("review: layout %d, from %s", skills[1].Layout, skills[1].VersionFrom)
	}
	if _, err := Scan(filepath.Join(root, "missing")); err == nil || !strings.Contains(err.Error(), "scan skills root") {
		t.Errorf("missing root: %v", err)
	}
}

func TestLoadVerdicts(t *testing.T) {
	tests := []struct {
		name     string
		dir      string // the folder loaded, relative to the temp root
		layout   Layout
		files    map[string]string
		status   Status
		errors   []string // Problem.String of every error
		warnings []string
		version  string        // checked when set
		from     VersionSource // checked when set
	}{
		{name: "valid", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf")}, status: StatusValid},
		{name: "name differs from folder", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf-tools")}, status: StatusValid,
			warnings: []string{`SKILL.md: front matter: name: warning: "pdf-tools" does not match the skill folder "pdf"; the skill is served as "pdf"`}},
		{name: "folder name invalid", dir: "PDF_Tools", files: map[string]string{"PDF_Tools/SKILL.md": skillMD("pdf")}, status: StatusInvalid,
			errors:   []string{`folder: skill folder name: "PDF_Tools" must be lowercase a-z, 0-9 and hyphens; the folder name is the skill's name`},
			warnings: []string{`SKILL.md: front matter: name: warning: "pdf" does not match the skill folder "PDF_Tools"; the skill is served as "PDF_Tools"`}},
		{name: "missing SKILL.md", dir: "pdf", files: map[string]string{"pdf/notes.md": "x"}, status: StatusIncomplete,
			errors: []string{"SKILL.md: is missing: the copy may be incomplete"}},
		{name: "empty SKILL.md", dir: "pdf", files: map[string]string{"pdf/SKILL.md": ""}, status: StatusIncomplete,
			errors: []string{"SKILL.md: is empty: the copy may be incomplete"}},
		{name: "unclosed front matter", dir: "pdf", files: map[string]string{"pdf/SKILL.md": "---\nname: pdf\n"}, status: StatusIncomplete,
			errors: []string{`SKILL.md:1: the front matter opened here is never closed by a line "---": the copy may be incomplete`}},
		{name: "no description", dir: "pdf", files: map[string]string{"pdf/SKILL.md": md(okBody, "name: pdf")}, status: StatusInvalid,
			errors: []string{"SKILL.md:2: front matter: description: is required but missing"}},
		{name: "versioned", dir: "pdf/2.0.0", layout: Versioned, files: map[string]string{"pdf/2.0.0/SKILL.md": skillMD("pdf")}, status: StatusValid},
		{name: "version folder not semver", dir: "pdf/latest", layout: Versioned, files: map[string]string{"pdf/latest/SKILL.md": skillMD("pdf")}, status: StatusInvalid,
			errors: []string{`folder: version folder name "latest" is not a strict semantic version (MAJOR.MINOR.PATCH, no leading "v")`}},
		{name: "metadata.version differs from folder", dir: "pdf/2.0.0", layout: Versioned,
			files: map[string]string{"pdf/2.0.0/SKILL.md": skillMD("pdf", "metadata:", "  version: '1.0'")}, status: StatusValid,
			warnings: []string{`SKILL.md: front matter: metadata.version: warning: "1.0" differs from the version folder "2.0.0"; the folder's name is the version`}},
		{name: "metadata.version not a version", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf", "metadata:", "  version: latest")}, status: StatusValid,
			warnings: []string{`SKILL.md: front matter: metadata.version: warning: "latest" is not a version (like 1.2.0); the skill is versioned by its content instead`}},
		{name: "top-level version", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf", "version: 2.7.0")}, status: StatusValid,
			version: "2.7.0", from: VersionFromField,
			warnings: []string{"SKILL.md:4: front matter: version: warning: is not a field of the Agent Skills specification; it is kept but not used, except as the version of an unversioned folder without metadata.version; the specification's place for it is metadata.version"}},
		{name: "metadata.version wins over a top-level version", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf", "version: 2.7.0", "metadata: {version: v3}")}, status: StatusValid,
			version: "3.0.0", from: VersionFromMetadata,
			warnings: []string{"SKILL.md:4: front matter: version: warning: is not a field of the Agent Skills specification; it is kept but not used, except as the version of an unversioned folder without metadata.version; the specification's place for it is metadata.version"}},
		{name: "top-level version not a version", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf", "version: [1]")}, status: StatusValid,
			from:     VersionFromDigest,
			warnings: []string{"SKILL.md:4: front matter: version: warning: is not a field of the Agent Skills specification; it is kept but not used, except as the version of an unversioned folder without metadata.version; the specification's place for it is metadata.version"}},
		{name: "manifest beside unversioned SKILL.md", dir: "pdf", files: map[string]string{"pdf/SKILL.md": skillMD("pdf"), "pdf/manifest.json": "{}"}, status: StatusInvalid,
			errors: []string{"manifest.json: a binary skill lives in a version folder (skills/pdf/<version>/manifest.json); move SKILL.md, manifest.json and the binary there together"}},
		{name: "tied skill named by the binary rule", dir: "text_kit/1.0.0", layout: Versioned,
			files: map[string]string{"text_kit/1.0.0/SKILL.md": skillMD("text_kit"), "text_kit/1.0.0/manifest.json": "{}"}, status: StatusValid,
			warnings: []string{
				`folder: warning: skill folder name: "text_kit" must be lowercase a-z, 0-9 and hyphens, so other Agent Skills clients may refuse it`,
				`SKILL.md:2: front matter: name: warning: "text_kit" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`}},
		{name: "binary version inside an unversioned skill", dir: "pdf",
			files: map[string]string{"pdf/SKILL.md": skillMD("pdf"), "pdf/1.0.0/manifest.json": "{}", "pdf/assets/manifest.json": "{}"}, status: StatusInvalid,
			errors: []string{"1.0.0/manifest.json: a binary version sits beside an unversioned SKILL.md, which makes its folder the skill's files; to tie them, move SKILL.md into 1.0.0/ (and into every other version folder)"}},
		{name: "not a folder", dir: "pdf/SKILL.md", files: map[string]string{"pdf/SKILL.md": skillMD("pdf")}, status: StatusInvalid,
			errors: []string{`folder: skill folder name: "SKILL.md" must be lowercase a-z, 0-9 and hyphens; the folder name is the skill's name`, "folder: %ROOT%/pdf/SKILL.md is not a folder"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, content := range tt.files {
				write(t, root, rel, content)
			}
			s := Load(filepath.Join(root, tt.dir), tt.layout)
			if s.Status != tt.status {
				t.Errorf("status = %s, want %s", s.Status, tt.status)
			}
			var want []string
			for _, e := range tt.errors {
				want = append(want, strings.ReplaceAll(e, "%ROOT%", root))
			}
			if got := errorStrings(s); !slices.Equal(got, want) {
				t.Errorf("errors:\n got %q\nwant %q", got, want)
			}
			if got := warningStrings(s); !slices.Equal(got, tt.warnings) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tt.warnings)
			}
			if (tt.version != "" && s.Version != tt.version) || (tt.from != "" && s.VersionFrom != tt.from) {
				t.Errorf("version %q from %s, want %q from %s", s.Version, s.VersionFrom, tt.version, tt.from)
			}
		})
	}
}

func TestProblemIn(t *testing.T) {
	root := t.TempDir()
	write(t, root, "pdf/SKILL.md", md(okBody, "name: PDF", "description: d"))
	s := Load(filepath.Join(root, "pdf"), Unversioned)
	if got, want := s.Problems[0].In("skills/pdf"), `skills/pdf/SKILL.md:2: front matter: name: warning: "PDF" must be lowercase a-z, 0-9 and hyphens; the skill is served under its folder name`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	p := Problem{Message: "holds more than 1000 files"}
	if got := p.In("skills/pdf/"); got != "skills/pdf/: holds more than 1000 files" {
		t.Errorf("folder problem: %s", got)
	}
	if got := (Problems{p, {File: "a", Message: "b", Warning: true}}).Error(); got != "folder: holds more than 1000 files; a: warning: b" {
		t.Errorf("Error() = %s", got)
	}
	if (Problems{{Message: "w", Warning: true}}).Err() != nil {
		t.Error("warnings alone are an error")
	}
}

func TestLoadTied(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "pdf", "1.0.0")
	write(t, dir, "SKILL.md", skillMD("pdf"))
	write(t, dir, "manifest.json", `{"name": "pdf", "entrypoint": "bin/pdf"}`)
	write(t, dir, "bin/pdf", "\x7fELF not really")
	write(t, dir, "references/tools.md", "# Tools")
	s := Load(dir, Versioned)
	if s.Status != StatusValid || !s.Tied {
		t.Fatalf("status %s, tied %v: %v", s.Status, s.Tied, s.Problems)
	}
	// The binary side is never listed, hashed or served.
	if got := paths(s); !slices.Equal(got, []string{"SKILL.md", "references/tools.md"}) {
		t.Errorf("files = %q", got)
	}
	for _, rel := range []string{"manifest.json", "bin/pdf"} {
		if _, err := s.ReadFile(rel); !errorsIs(err, ErrNotServed) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotServed", rel, err)
		}
	}
	before := s.Digest
	write(t, dir, "bin/pdf", "\x7fELF rebuilt")
	if again := Load(dir, Versioned); again.Digest != before {
		t.Error("the binary changed the instructions' digest; pkg/manifest's fingerprint covers it")
	}
}

func TestDigest(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a", "notes")
	b := filepath.Join(root, "b", "notes")
	for _, dir := range []string{a, b} {
		write(t, dir, "SKILL.md", skillMD("notes"))
		write(t, dir, "references/one.md", "one")
	}
	da, db := Load(a, Unversioned), Load(b, Unversioned)
	if da.Digest != db.Digest || da.Version != db.Version {
		t.Fatalf("equal folders: %s@%s vs %s@%s", da.Digest, da.Version, db.Digest, db.Version)
	}
	// Touching a file changes nothing; editing, renaming or adding one changes the digest and
	// with it the pseudo-version, so a hot reload picks the edit up.
	now := mustStat(t, filepath.Join(b, "references/one.md")).ModTime()
	if err := os.Chtimes(filepath.Join(b, "references/one.md"), now.Add(time.Hour), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := Load(b, Unversioned).Digest; got != da.Digest {
		t.Error("mtime changed the digest")
	}
	seen := map[string]string{da.Digest: "original"}
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"edit", func() { write(t, b, "references/one.md", "One") }},
		{"rename", func() {
			must(t, os.Rename(filepath.Join(b, "references/one.md"), filepath.Join(b, "references/two.md")))
		}},
		{"add", func() { write(t, b, "assets/x.txt", "") }},
		{"edit SKILL.md", func() { write(t, b, "SKILL.md", skillMD("notes", "license: MIT")) }},
	} {
		step.do()
		s := Load(b, Unversioned)
		if prev, dup := seen[s.Digest]; dup {
			t.Errorf("%s: digest equals the one after %s", step.name, prev)
		}
		seen[s.Digest] = step.name
		if s.Version != "0.0.0+sha256."+s.Digest[:12] {
			t.Errorf("%s: version %s", step.name, s.Version)
		}
	}
}
