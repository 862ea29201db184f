package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/skillmd"
)

// interpreterWarning says what an MCP version's bare command needs from
// the daemon, which validate cannot see: the operator's allow map.
func interpreterWarning(v manifest.Version) string {
	m := v.Manifest
	if m.RuntimeName() != manifest.RuntimeMCP || strings.Contains(m.Command, "/") {
		return ""
	}
	if fi, err := os.Lstat(filepath.Join(v.Dir, m.Command)); err == nil && fi.Mode().IsRegular() {
		return fmt.Sprintf("$.command: %q names an interpreter the host must allow, not the file %s in the folder; write \"./%s\" to run the file", m.Command, m.Command, m.Command)
	}
	return fmt.Sprintf("$.command: %q runs only on a host started with --runtime %s=/absolute/path (validate cannot see the daemon's allow map)", m.Command, m.Command)
}

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	strict := fs.Bool("strict-modes", true, "refuse group- or world-writable and foreign-owned files, as the daemon does")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: host validate [--strict-modes=false] PATH\n\nPATH is a version folder (skills/NAME/VERSION), a skill folder or a whole tree.")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	versions, problems, err := manifest.ValidatePath(pos[0], manifest.Options{StrictModes: *strict})
	if err != nil && !errors.Is(err, manifest.ErrAgentSkill) {
		fmt.Fprintf(stderr, "host validate: %v\n", err)
		return exitFailure
	}
	found, err := agentSkills(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "host validate: %v\n", err)
		return exitFailure
	}
	loader.JoinTied(&manifest.Tree{Versions: versions}, found)
	bad := len(problems)
	for _, p := range problems {
		fmt.Fprintf(stdout, "%s: %s\n", pos[0], p)
	}
	for _, v := range versions {
		if v.Status == manifest.StatusValid {
			fmt.Fprintf(stdout, "ok          %s@%s (%s)\n", v.Skill, v.Version, v.Dir)
			if w := interpreterWarning(v); w != "" {
				fmt.Fprintf(stdout, "warning     %s@%s: %s\n", v.Skill, v.Version, w)
			}
			continue
		}
		bad++
		fmt.Fprintf(stdout, "%-11s %s@%s (%s)\n", v.Status, v.Skill, v.Version, v.Dir)
		for _, p := range v.Problems {
			fmt.Fprintf(stdout, "    %s\n", p)
		}
	}
	bad += reportAgentSkills(stdout, found)
	for _, w := range usesWarnings(pos[0], versions, manifest.Options{StrictModes: *strict}) {
		fmt.Fprintf(stdout, "warning     %s\n", w)
	}
	if len(versions) == 0 && len(problems) == 0 && len(found) == 0 {
		fmt.Fprintf(stdout, "%s: no version folders found\n", pos[0])
		return exitFailure
	}
	if bad > 0 {
		return exitFailure
	}
	return exitOK
}

// usesWarnings checks the uses of the versions validated against the tree
// they are in: the whole tree when PATH is one, else the tree around the
// version or skill folder given.
func usesWarnings(path string, versions []manifest.Version, opts manifest.Options) []string {
	tree := versions
	if len(versions) > 0 {
		root := filepath.Dir(filepath.Dir(versions[0].Dir))
		if abs, err := filepath.Abs(path); err != nil || filepath.Clean(abs) != root {
			t, err := manifest.Scan(root, opts)
			if err != nil {
				return []string{fmt.Sprintf("uses not checked: cannot scan the tree %s: %v", root, err)}
			}
			tree = t.Versions
		}
	}
	return manifest.UsesWarnings(versions, tree)
}

// reportAgentSkills prints the verdict on each Agent Skill as the versions' is printed, every
// problem located in its file ("skills/pdf/SKILL.md:2: front matter: name: …"), and returns how
// many are not valid. A tied copy's errors are already its version's problems (JoinTied), so
// only its warnings are printed here, and it is not counted twice.
func reportAgentSkills(w io.Writer, found []skillmd.Skill) int {
	bad := 0
	for _, s := range found {
		id := s.Name + "@" + s.Version
		if s.Tied || s.Status == skillmd.StatusValid {
			if !s.Tied {
				fmt.Fprintf(w, "ok          %s (%s)\n", id, s.Dir)
			}
			for _, p := range s.Problems.Warnings() {
				p.Warning = false // the line says warning already
				fmt.Fprintf(w, "warning     %s: %s\n", id, p.In(s.Dir))
			}
			continue
		}
		bad++
		fmt.Fprintf(w, "%-11s %s (%s)\n", s.Status, id, s.Dir)
		for _, p := range s.Problems {
			fmt.Fprintf(w, "    %s\n", p.In(s.Dir))
		}
	}
	return bad
}

// agentSkills loads the Agent Skills (SKILL.md folders) under path with pkg/skillmd, as the
// daemon's scan does: a whole tree with skillmd.Scan; a skill folder's version folders; or one
// folder holding SKILL.md. Which layout such a folder has depends on the tree root, which
// validate is not told: a folder named as a semantic version is a version folder
// (skills/<name>/<version>/SKILL.md, as a skill name cannot hold a dot), any other is a skill
// folder (skills/<name>/SKILL.md).
func agentSkills(path string) ([]skillmd.Skill, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load Agent Skills under %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("load Agent Skills under %s: %w", path, err)
	}
	if !fi.IsDir() {
		abs = filepath.Dir(abs) // SKILL.md or manifest.json: ValidatePath refused any other file
	}
	if skillmd.IsSkillFolder(abs) {
		if skillmd.IsSkillFolder(filepath.Dir(abs)) {
			return nil, nil // a folder inside an unversioned skill: its files, not a skill
		}
		layout := skillmd.Unversioned
		if _, err := semver.StrictNewVersion(filepath.Base(abs)); err == nil {
			layout = skillmd.Versioned
		}
		return []skillmd.Skill{skillmd.Load(abs, layout)}, nil
	}
	if _, err := os.Lstat(filepath.Join(abs, manifest.FileName)); err == nil {
		return nil, nil // a binary version folder without SKILL.md
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("load Agent Skills under %s: %w", path, err)
	}
	var versions []skillmd.Skill
	tree := false
	for _, e := range entries {
		dir := filepath.Join(abs, e.Name())
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		if _, err := semver.StrictNewVersion(e.Name()); err != nil {
			tree = tree || skillmd.IsSkillFolder(dir)
			continue
		}
		if skillmd.IsSkillFolder(dir) {
			versions = append(versions, skillmd.Load(dir, skillmd.Versioned))
		}
	}
	if len(versions) > 0 && !tree {
		return versions, nil // a skill folder: skills/<name>/<version>/SKILL.md
	}
	found, err := skillmd.Scan(abs)
	if err != nil {
		return nil, fmt.Errorf("load Agent Skills under %s: %w", path, err)
	}
	return found, nil
}
