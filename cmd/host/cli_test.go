package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args, pos []string
		json      bool
		tag       string
	}{
		{args: []string{"calc"}, pos: []string{"calc"}},
		{args: []string{"calc", "--json"}, pos: []string{"calc"}, json: true},
		{args: []string{"--json", "calc", "1.1.0"}, pos: []string{"calc", "1.1.0"}, json: true},
		{args: []string{"calc", "--tag", "math", "1.1.0"}, pos: []string{"calc", "1.1.0"}, tag: "math"},
		{args: []string{"calc.evaluate", "-"}, pos: []string{"calc.evaluate", "-"}},
		{args: []string{"--", "--json"}, pos: []string{"--json"}},
		{args: []string{"x", "--", "-y", "--json"}, pos: []string{"x", "-y", "--json"}},
		{args: nil, pos: nil},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		j := fs.Bool("json", false, "")
		tag := fs.String("tag", "", "")
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *j != tc.json || *tag != tc.tag {
			t.Errorf("%q: pos %q json %v tag %q err %v; want %q %v %q", tc.args, pos, *j, *tag, err, tc.pos, tc.json, tc.tag)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"calc", "--nope"}); err == nil {
		t.Error("an unknown flag after a positional argument was accepted")
	}
}

func TestFirstLineCutsOnCharacters(t *testing.T) {
	long := strings.Repeat("报销", 80) + "\nsecond line"
	got := firstLine(long)
	if !utf8.ValidString(got) || utf8.RuneCountInString(got) != 101 || !strings.HasSuffix(got, "…") {
		t.Fatalf("firstLine = %q (%d runes)", got, utf8.RuneCountInString(got))
	}
	if got := firstLine("  short\nmore"); got != "short" {
		t.Fatalf("firstLine = %q", got)
	}
}

// validate names the path it was given in every line, wherever the flags
// stand on the command line.
func TestValidateNamesThePath(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{dir, "--strict-modes=false"}, {"--strict-modes=false", dir}} {
		var out, errOut strings.Builder
		if code := runValidate(args, &out, &errOut); code != exitFailure || out.String() != dir+": no version folders found\n" {
			t.Errorf("validate %q = %d, %q %q", args, code, out.String(), errOut.String())
		}
	}
}

// validate warns about uses names that no skill in the tree serves, for a
// whole tree and for one version folder in it alike, and does not fail.
func TestValidateWarnsAboutUnservedUses(t *testing.T) {
	root := t.TempDir()
	script := filepath.Join(t.TempDir(), "run")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range []testenv.Version{
		{Skill: "calc", Version: "1.0.0", Binary: script, Tools: []string{"evaluate"}},
		{Skill: "assist", Version: "1.0.0", Binary: script, Uses: []string{"calc.evaluate", "calc.nope", "mail.*"}},
	} {
		if _, err := testenv.Install(root, v); err != nil {
			t.Fatal(err)
		}
	}
	want := "warning     assist@1.0.0: uses calc.nope, but no version of skill calc lists tool nope (it lists evaluate)\n" +
		"warning     assist@1.0.0: uses mail.*, but no valid version of skill mail is in the tree\n"
	for _, path := range []string{root, filepath.Join(root, "assist", "1.0.0")} {
		var out, errOut strings.Builder
		code := runValidate([]string{"--strict-modes=false", path}, &out, &errOut)
		if code != exitOK || !strings.HasSuffix(out.String(), want) {
			t.Errorf("validate %s = %d:\n%s%s\nwant it to end with:\n%s", path, code, out.String(), errOut.String(), want)
		}
	}
}

// validate accepts an MCP server's folder and says what its interpreter
// needs from the daemon, which it cannot see.
func TestValidateMCPVersion(t *testing.T) {
	tree := t.TempDir()
	dir := filepath.Join(tree, "memory", "1.0.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.js"), []byte("// a server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest, err := manifest.FolderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := fmt.Sprintf(`{"manifest_version":1,"name":"memory","version":"1.0.0","description":"Remembers.",
		"runtime":"mcp","command":"node","args":["server.js"],"digest":"sha256:%s"}`, digest)
	if err := os.WriteFile(filepath.Join(dir, manifest.FileName), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := runValidate([]string{"--strict-modes=false", tree}, &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "ok          memory@1.0.0") ||
		!strings.Contains(out.String(), `warning     memory@1.0.0: $.command: "node" runs only on a host started with --runtime node=/absolute/path`) {
		t.Fatalf("validate = %d, %q %q", code, out.String(), errOut.String())
	}
}

// validate judges Agent Skills as the daemon does, in both layouts and tied to a binary, and
// locates every problem in its file: a valid skill is ok, one with warnings only is ok with
// its warnings, an invalid one (and the tied version it holds back) fails.
func TestValidateAgentSkills(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pdf/SKILL.md", "---\nname: pdf\ndescription: Fill in PDF forms.\nmetadata:\n  version: \"1.2.0\"\n---\nUse it.\n")
	write("notes/2.0.0/SKILL.md", "---\nname: notes\ndescription: Take notes.\nauthor: me\n---\nBody.\n")
	write("review/1.0.0/SKILL.md", "---\nname: review\ndescription: \"\"\n---\nBody.\n")
	script := filepath.Join(t.TempDir(), "run")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	calc, err := testenv.Install(root, testenv.Version{Skill: "calc", Version: "1.0.0", Binary: script, Tools: []string{"evaluate"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(calc, "SKILL.md"), []byte("---\nname: calc\n---\nCall calc.evaluate.\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	pdf, notes, review := filepath.Join(root, "pdf"), filepath.Join(root, "notes", "2.0.0"), filepath.Join(root, "review", "1.0.0")
	okPDF := "ok          pdf@1.2.0 (" + pdf + ")\n"
	okNotes := "ok          notes@2.0.0 (" + notes + ")\n" +
		"warning     notes@2.0.0: " + notes + "/SKILL.md:4: front matter: author: is not a field of the Agent Skills specification; it is kept but not used\n"
	badReview := "invalid     review@1.0.0 (" + review + ")\n" +
		"    " + review + "/SKILL.md:3: front matter: description: is empty; a skill without a description cannot be offered to a model\n"
	badCalc := "invalid     calc@1.0.0 (" + calc + ")\n" +
		"    SKILL.md:2: front matter: description: is required but missing\n"
	for _, tc := range []struct {
		path string
		code int
		want []string
	}{
		{path: root, code: exitFailure, want: []string{okPDF, okNotes, badReview, badCalc}},
		{path: pdf, code: exitOK, want: []string{okPDF}},
		{path: filepath.Join(pdf, "SKILL.md"), code: exitOK, want: []string{okPDF}},
		{path: filepath.Join(root, "notes"), code: exitOK, want: []string{okNotes}},
		{path: notes, code: exitOK, want: []string{okNotes}},
		{path: review, code: exitFailure, want: []string{badReview}},
		{path: calc, code: exitFailure, want: []string{badCalc}},
	} {
		var out, errOut strings.Builder
		code := runValidate([]string{"--strict-modes=false", tc.path}, &out, &errOut)
		if code != tc.code {
			t.Errorf("validate %s = %d, want %d:\n%s%s", tc.path, code, tc.code, out.String(), errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("validate %s:\n%s%s\nwant it to hold:\n%s", tc.path, out.String(), errOut.String(), w)
			}
		}
	}
}
