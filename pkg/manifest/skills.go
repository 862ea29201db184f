package manifest

import (
	"errors"
	"os"
	"path/filepath"
)

// Agent Skills (folders holding a SKILL.md of instructions) share the tree with binary skills.
// pkg/skillmd judges them; this package only keeps them apart, by file names alone, so that it
// imports nothing of ours (test/arch): a folder of instructions alone is not a binary version,
// and Scan skips it rather than calling it one with no manifest.json.

// agentSkillFile is pkg/skillmd's FileName.
const agentSkillFile = "SKILL.md"

// ErrAgentSkill is ValidatePath's answer for an Agent Skill folder: this package judges binary
// skills only, and pkg/skillmd judges the rest.
var ErrAgentSkill = errors.New("an Agent Skill (it holds SKILL.md and no manifest.json); pkg/skillmd judges those, not host validate (see docs/skills.md)")

// instructionsOnly reports a skill folder that holds Agent Skills and no binary: SKILL.md
// directly (unversioned, whose subfolders are its files, not versions), or version folders
// holding SKILL.md, and no version folder holding manifest.json. A folder with a binary
// version is always scanned as a binary skill, even beside a stray SKILL.md (which pkg/skillmd
// reports), so adding a SKILL.md in the wrong place can never take a serving skill away.
func instructionsOnly(skillDir string) bool {
	entries, err := os.ReadDir(skillDir)
	if err != nil {
		return false
	}
	found := exists(filepath.Join(skillDir, agentSkillFile))
	for _, e := range entries {
		if ignored(e.Name()) {
			continue
		}
		dir := filepath.Join(skillDir, e.Name())
		if exists(filepath.Join(dir, FileName)) {
			return false
		}
		found = found || exists(filepath.Join(dir, agentSkillFile))
	}
	return found
}

// instructionVersion reports a version folder that holds SKILL.md and no manifest.json.
func instructionVersion(dir string) bool {
	return exists(filepath.Join(dir, agentSkillFile)) && !exists(filepath.Join(dir, FileName))
}
