package manifest

import (
	"os"
	"path/filepath"

	"github.com/Masterminds/semver/v3"
	"github.com/skillhost/skillhost/pkg/skillmd"
)

// Agent Skills (SKILL.md folders) share the tree with binary skills; pkg/skillmd judges them.
// This file keeps the two apart: a folder of instructions alone is not a binary version (Scan
// skips it rather than calling it a version with no manifest.json), a version folder holding
// both is a tied skill whose SKILL.md must be valid too, and ValidatePath reports both kinds.

// instructionsOnly reports a skill folder that holds Agent Skills and no binary: SKILL.md
// directly (unversioned, whose subfolders are its files, not versions), or version folders
// holding SKILL.md, and no version folder holding manifest.json. A folder with a binary version
// is always scanned as a binary skill, even beside a stray SKILL.md (which pkg/skillmd reports),
// so adding a SKILL.md in the wrong place can never take a serving skill away.
func instructionsOnly(skillDir string) bool {
	entries, err := os.ReadDir(skillDir)
	if err != nil {
		return false
	}
	found := skillmd.IsSkillFolder(skillDir)
	for _, e := range entries {
		if ignored(e.Name()) {
			continue
		}
		dir := filepath.Join(skillDir, e.Name())
		if exists(filepath.Join(dir, FileName)) {
			return false
		}
		found = found || skillmd.IsSkillFolder(dir)
	}
	return found
}

// instructionVersion reports a version folder that holds SKILL.md and no manifest.json.
func instructionVersion(dir string) bool {
	return skillmd.IsSkillFolder(dir) && !exists(filepath.Join(dir, FileName))
}

// instructions judges the SKILL.md of a tied version folder: its errors are the version's
// problems (so a broken copy keeps the old version serving), and its digest joins the
// fingerprint, so editing the instructions reloads the version like editing the manifest.
func (l *loader) instructions() {
	v := &l.v
	if !skillmd.IsSkillFolder(v.Dir) {
		return
	}
	s := skillmd.Load(v.Dir, skillmd.Versioned)
	v.Instructions = &s
	for _, p := range s.Problems.Errors() {
		if s.Status == skillmd.StatusIncomplete {
			l.notYet(p.Where(), "%s", p.Message)
		} else {
			l.bad(p.Where(), "%s", p.Message)
		}
	}
	if v.Fingerprint != "" && s.Digest != "" {
		v.Fingerprint = fingerprint([]byte(v.Fingerprint), s.Digest)
	}
}

// fromSkill presents an instruction-only skill as a Version for ValidatePath, warnings
// included and marked, so "host validate" lists it beside the binary versions.
func fromSkill(s skillmd.Skill) Version {
	v := Version{Skill: s.Name, Version: s.Version, Dir: s.Dir, Status: Status(s.Status), Instructions: &s}
	if sv, err := semver.StrictNewVersion(s.Version); err == nil {
		v.Semver = sv
	}
	for _, p := range s.Problems {
		msg := p.Message
		if p.Warning {
			msg = "warning: " + msg
		}
		v.Problems = append(v.Problems, Problem{Path: p.Where(), Message: msg})
	}
	return v
}

// isInstructionVersion reports a folder named like a version that holds SKILL.md, which is
// how a skill folder of Agent Skill versions is told from a root of Agent Skills.
func isInstructionVersion(dir string) bool {
	_, err := semver.StrictNewVersion(filepath.Base(dir))
	return err == nil && skillmd.IsSkillFolder(dir)
}

// instructionsAt judges the Agent Skill folder abs (it holds SKILL.md and no manifest.json):
// a version folder when its name is a version and its parent is not itself a skill folder.
func instructionsAt(abs string) Version {
	layout := skillmd.Unversioned
	if _, err := semver.StrictNewVersion(filepath.Base(abs)); err == nil && !skillmd.IsSkillFolder(filepath.Dir(abs)) {
		layout = skillmd.Versioned
	}
	return fromSkill(skillmd.Load(abs, layout))
}

// instructionVersions judges the instruction-only version folders of a skill folder.
func instructionVersions(skillDir string) []Version {
	var out []Version
	entries, _ := os.ReadDir(skillDir) // an unreadable folder is reported by versionDirs
	for _, e := range entries {
		if dir := filepath.Join(skillDir, e.Name()); !ignored(e.Name()) && instructionVersion(dir) {
			out = append(out, fromSkill(skillmd.Load(dir, skillmd.Versioned)))
		}
	}
	return out
}

// instructionSkills judges the Agent Skills of a root that have no binary; tied ones are
// among the root's versions already.
func instructionSkills(root string) []Version {
	var out []Version
	skills, _ := skillmd.Scan(root) // Scan has just read the root
	for _, s := range skills {
		if !s.Tied {
			out = append(out, fromSkill(s))
		}
	}
	return out
}
