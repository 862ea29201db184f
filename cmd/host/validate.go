package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillhost/skillhost/pkg/manifest"
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
	if err != nil {
		fmt.Fprintf(stderr, "host validate: %v\n", err)
		return exitFailure
	}
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
	for _, w := range usesWarnings(pos[0], versions, manifest.Options{StrictModes: *strict}) {
		fmt.Fprintf(stdout, "warning     %s\n", w)
	}
	if len(versions) == 0 && len(problems) == 0 {
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
