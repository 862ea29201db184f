package manifest

import (
	"errors"
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

func TestScanLeavesAgentSkillsToSkillmd(t *testing.T) {
	root := t.TempDir()
	writeVersion(t, root, "calc", "1.0.0", script, nil)
	// pdf is unversioned, with a subfolder whose name looks like a version; review is
	// versioned with no binary; 3d-models has a name the Agent Skills rule allows and the
	// binary rule does not.
	writeFile(t, filepath.Join(root, "pdf", "SKILL.md"), skillMD("name: pdf", "description: Reads PDFs."), 0o644)
	writeFile(t, filepath.Join(root, "pdf", "scripts", "run.py"), []byte("print()"), 0o644)
	writeFile(t, filepath.Join(root, "pdf", "1.0.0", "notes.md"), []byte("not a version"), 0o644)
	writeFile(t, filepath.Join(root, "review", "1.0.0", "SKILL.md"), skillMD("name: review", "description: Reviews code."), 0o644)
	writeFile(t, filepath.Join(root, "3d-models", "SKILL.md"), skillMD("name: 3d-models", "description: Meshes."), 0o644)
	// A tied version (SKILL.md beside manifest.json) is a binary version like any other.
	tied := writeVersion(t, root, "calc", "1.1.0", script, nil)
	writeFile(t, filepath.Join(tied, "SKILL.md"), skillMD("name: calc", "description: How to use calc."), 0o644)

	tree, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Before, pdf/scripts and pdf/1.0.0 were invalid versions, review/1.0.0 an incomplete one
	// without a manifest.json, and 3d-models a bad skill folder name.
	if got := versionsOf(tree.Versions); !slices.Equal(got, []string{"calc/1.0.0:valid", "calc/1.1.0:valid"}) {
		t.Errorf("versions = %v", got)
	}
	if len(tree.Problems) != 0 {
		t.Errorf("problems = %v", tree.Problems)
	}
	if got := tree.Skills(); !slices.Equal(got, []string{"calc"}) {
		t.Errorf("skills = %v", got)
	}

	for _, p := range []string{filepath.Join(root, "pdf"), filepath.Join(root, "pdf", "SKILL.md"), filepath.Join(root, "review", "1.0.0")} {
		if _, _, err := ValidatePath(p, Options{}); !errors.Is(err, ErrAgentSkill) {
			t.Errorf("ValidatePath(%s) = %v, want ErrAgentSkill", p, err)
		}
	}
	vs, ps, err := ValidatePath(root, Options{})
	if err != nil || len(ps) != 0 || !slices.Equal(versionsOf(vs), []string{"calc/1.0.0:valid", "calc/1.1.0:valid"}) {
		t.Errorf("ValidatePath(root) = %v, %v, %v", versionsOf(vs), ps, err)
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
}
