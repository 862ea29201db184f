package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// skillMD is a SKILL.md with the given front matter lines and a short body.
func skillMD(front ...string) []byte {
	out := "---\n"
	for _, l := range front {
		out += l + "\n"
	}
	return []byte(out + "---\n# Steps\n\nDo it.\n")
}

// agentSkillsTree writes binary skills beside Agent Skills: pdf (unversioned, with a
// subfolder whose name looks like a version), review (versioned, no binary) and 3d-models (a
// name the Agent Skills rule allows and the binary rule does not).
func agentSkillsTree(t *testing.T) string {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	writeFile(t, filepath.Join(root, "pdf", "SKILL.md"), skillMD("name: pdf", "description: Reads PDFs.", "colour: blue"), 0o644)
	writeFile(t, filepath.Join(root, "pdf", "scripts", "run.py"), []byte("print()"), 0o644)
	writeFile(t, filepath.Join(root, "pdf", "1.0.0", "notes.md"), []byte("not a version"), 0o644)
	writeFile(t, filepath.Join(root, "review", "1.0.0", "SKILL.md"), skillMD("name: review", "description: Reviews code."), 0o644)
	writeFile(t, filepath.Join(root, "review", "2.0.0", "SKILL.md"), skillMD("name: review"), 0o644)
	writeFile(t, filepath.Join(root, "3d-models", "SKILL.md"), skillMD("name: 3d-models", "description: Meshes."), 0o644)
	return root
}

func TestScanLeavesAgentSkillsToSkillmd(t *testing.T) {
	root := agentSkillsTree(t)
	tree, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Before, pdf/scripts and pdf/1.0.0 were invalid versions, review/* incomplete ones
	// without a manifest.json, and 3d-models a bad skill folder name.
	if got := versionsOf(tree.Versions); !slices.Equal(got, []string{"calc/1.0.0:valid"}) {
		t.Errorf("versions = %v", got)
	}
	if len(tree.Problems) != 0 {
		t.Errorf("problems = %v", tree.Problems)
	}
	if got := tree.Skills(); !slices.Equal(got, []string{"calc"}) {
		t.Errorf("skills = %v", got)
	}
}

func TestStraySKILLmdKeepsABinarySkill(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	writeFile(t, filepath.Join(root, "calc", "SKILL.md"), skillMD("name: calc", "description: How to use calc."), 0o644)
	tree, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(tree.Valid("calc")); !slices.Equal(got, []string{"calc/1.0.0:valid"}) {
		t.Errorf("a SKILL.md beside the versions took the binary away: %v", got)
	}
	if !hasProblem(tree.Problems, "calc/SKILL.md", "not a folder") {
		t.Errorf("tree problems = %v", tree.Problems)
	}
	// host validate says what to do about it.
	vs, _, _ := ValidatePath(root, Options{})
	var found bool
	for _, v := range vs {
		found = found || (v.Instructions != nil && v.Status == StatusInvalid && hasProblem(v.Problems, "1.0.0/manifest.json", "move SKILL.md into 1.0.0/"))
	}
	if !found {
		t.Errorf("validate = %v", versionsOf(vs))
	}
}

func TestTiedVersion(t *testing.T) {
	root := t.TempDir()
	dir := writeVersion(t, root, "calc", "1.0.0", script, nil)
	plain := Load(dir, Options{})

	writeFile(t, filepath.Join(dir, "SKILL.md"), skillMD("name: calc", "description: How to use the calculator."), 0o644)
	tied := Load(dir, Options{})
	if tied.Status != StatusValid || tied.Instructions == nil || !tied.Instructions.Tied {
		t.Fatalf("status %s, instructions %+v: %v", tied.Status, tied.Instructions, tied.Problems)
	}
	if tied.Fingerprint == plain.Fingerprint {
		t.Error("SKILL.md does not count in the fingerprint")
	}
	writeFile(t, filepath.Join(dir, "SKILL.md"), skillMD("name: calc", "description: How to use the calculator well."), 0o644)
	if edited := Load(dir, Options{}); edited.Fingerprint == tied.Fingerprint || edited.Status != StatusValid {
		t.Errorf("editing SKILL.md: status %s, fingerprint unchanged: %v", edited.Status, edited.Fingerprint == tied.Fingerprint)
	}

	// Broken instructions keep the version from serving, with the reason; an empty SKILL.md
	// is a copy in progress.
	writeFile(t, filepath.Join(dir, "SKILL.md"), skillMD("name: calc"), 0o644)
	if v := Load(dir, Options{}); v.Status != StatusInvalid || !hasProblem(v.Problems, "SKILL.md:2: front matter: description", "is required but missing") {
		t.Errorf("no description: %s %v", v.Status, v.Problems)
	}
	writeFile(t, filepath.Join(dir, "SKILL.md"), nil, 0o644)
	if v := Load(dir, Options{}); v.Status != StatusIncomplete || !hasProblem(v.Problems, "SKILL.md", "is empty") {
		t.Errorf("empty: %s %v", v.Status, v.Problems)
	}
}

func TestValidatePathAgentSkills(t *testing.T) {
	root := agentSkillsTree(t)
	cases := []struct {
		name string
		path string
		want []string
	}{
		{"root", root, []string{"3d-models/0.0.0+sha256.*:valid", "calc/1.0.0:valid", "pdf/0.0.0+sha256.*:valid", "review/1.0.0:valid", "review/2.0.0:invalid"}},
		{"unversioned folder", filepath.Join(root, "pdf"), []string{"pdf/0.0.0+sha256.*:valid"}},
		{"SKILL.md file", filepath.Join(root, "pdf", "SKILL.md"), []string{"pdf/0.0.0+sha256.*:valid"}},
		{"skill folder of versions", filepath.Join(root, "review"), []string{"review/1.0.0:valid", "review/2.0.0:invalid"}},
		{"version folder", filepath.Join(root, "review", "2.0.0"), []string{"review/2.0.0:invalid"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, ps, err := ValidatePath(c.path, Options{})
			if err != nil || len(ps) != 0 {
				t.Fatalf("%v %v", err, ps)
			}
			var got []string
			for _, v := range vs {
				ver := v.Version
				if len(ver) > len("0.0.0+sha256.") && ver[:13] == "0.0.0+sha256." {
					ver = "0.0.0+sha256.*"
				}
				got = append(got, v.Skill+"/"+ver+":"+string(v.Status))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v want %v", got, c.want)
			}
		})
	}
	vs, _, _ := ValidatePath(filepath.Join(root, "pdf"), Options{})
	if !hasProblem(vs[0].Problems, "SKILL.md:4: front matter: colour", "warning: is not a field") {
		t.Errorf("warnings are not shown: %v", vs[0].Problems)
	}
	vs, _, _ = ValidatePath(filepath.Join(root, "review", "2.0.0"), Options{})
	if !hasProblem(vs[0].Problems, "SKILL.md:2: front matter: description", "is required but missing") {
		t.Errorf("problems = %v", vs[0].Problems)
	}
	if err := os.Remove(filepath.Join(root, "pdf", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ValidatePath(filepath.Join(root, "pdf", "scripts", "run.py"), Options{}); err == nil {
		t.Error("a script is not a path to validate")
	}
}
