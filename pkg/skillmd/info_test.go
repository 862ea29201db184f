package skillmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestInfo(t *testing.T) {
	s := Load("testdata/skills/pdf-processing", Unversioned)
	in := s.Info([]string{"calc.evaluate", "pdf-processing.fill_form"})
	if in.Kind != SkillInstructions || in.Status != StatusValid || in.Version != "1.2.0" ||
		in.License != "Apache-2.0. See LICENSE.txt." || in.Metadata["author"] != "skillhost-fixtures" ||
		in.InstructionBytes != len(s.Doc.Body) || len(in.Files) != 6 || len(in.Tools) != 0 {
		t.Errorf("info = %+v", in)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// A listing carries no instructions, and its empty lists are lists, not null.
	for _, want := range []string{`"kind":"instructions"`, `"tools":[]`, `"allowed_tools":["Read","Bash(python3:*)"]`, `"path":"scripts/fill_form.py","size":786,"kind":"script","served":true,"sha256":"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), "Never guess at the content") {
		t.Error("the body is in the listing")
	}

	dir := filepath.Join(t.TempDir(), "pdf", "1.0.0")
	write(t, dir, "SKILL.md", skillMD("pdf"))
	write(t, dir, "manifest.json", `{"entrypoint": "pdf"}`)
	tied := Load(dir, Versioned).Info([]string{"pdf.merge"})
	if tied.Kind != SkillTied || len(tied.Tools) != 1 || tied.Tools[0] != "pdf.merge" {
		t.Errorf("tied = %+v", tied)
	}
	broken := Load(filepath.Join(t.TempDir(), "gone"), Unversioned).Info(nil)
	if broken.Status != StatusInvalid || broken.Description != "" || broken.Files == nil {
		t.Errorf("broken = %+v", broken)
	}
}
