package manifest

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Tree is the result of scanning a skills root: every version folder with its verdict, plus
// the problems that belong to no single version.
type Tree struct {
	Root string
	// Versions holds every version folder, valid or not, sorted by skill, then by semver
	// ascending; folders whose name is not semver come last, by name.
	Versions []Version
	// Problems are problems of the root itself or of skill folders (a bad skill folder name,
	// an unreadable folder, a stray file).
	Problems Problems

	skills []string // every skill folder seen, including ones without versions
}

// ignored reports names Scan skips: dot files, and "_" folders, where installers stage a copy
// before renaming it into place, so half-copied trees never look like versions.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// Scan walks root/<skill>/<version>/ and loads every version folder. One bad folder never
// hides or stops the others: its problems are recorded and the walk goes on. The only error
// is a root that cannot be read, because then there is no tree to report on.
//
// Two folders of one skill that claim the same semver precedence ("1.0.0" and "1.0.0+build")
// are both invalid: semver says neither is newer, so picking one would be arbitrary.
func Scan(root string, opts Options) (*Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("scan skills root: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("scan skills root: %w", err)
	}
	t := &Tree{Root: abs}
	if opts.StrictModes {
		for _, msg := range strictProblems("skills root", abs) {
			t.Problems = append(t.Problems, Problem{Path: "root", Message: msg})
		}
	}
	var dirs []string
	for _, e := range entries {
		name := e.Name()
		if ignored(name) {
			continue
		}
		p := filepath.Join(abs, name)
		if !isDir(p, e) {
			continue // README.md and the like live beside the skills
		}
		if instructionsOnly(p) {
			continue // Agent Skills with no binary: pkg/skillmd's, not versions
		}
		t.skills = append(t.skills, name)
		if msg := skillNameProblem(name); msg != "" {
			t.Problems = append(t.Problems, Problem{Path: name, Message: msg + "; its versions cannot be valid"})
		}
		vs, ps := versionDirs(p)
		t.Problems = append(t.Problems, ps...)
		dirs = append(dirs, vs...)
	}
	t.Versions = loadAll(dirs, opts)
	finish(t.Versions)
	return t, nil
}

// versionDirs lists the version folders of one skill folder.
func versionDirs(skillDir string) ([]string, Problems) {
	name := filepath.Base(skillDir)
	entries, err := os.ReadDir(skillDir)
	if err != nil {
		return nil, Problems{{Path: name, Message: fmt.Sprintf("cannot read skill folder: %v", err)}}
	}
	var dirs []string
	var ps Problems
	for _, e := range entries {
		if ignored(e.Name()) {
			continue
		}
		p := filepath.Join(skillDir, e.Name())
		if !isDir(p, e) {
			ps = append(ps, Problem{Path: name + "/" + e.Name(), Message: "not a folder, so not a version; ignored"})
			continue
		}
		if instructionVersion(p) {
			continue // an Agent Skill version with no binary
		}
		dirs = append(dirs, p)
	}
	return dirs, ps
}

// isDir follows a symlink, so a development tree may link a version folder to a build
// folder; Load then checks the real folder it points to.
func isDir(p string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// loadAll loads version folders in parallel: hashing binaries dominates a cold scan and is
// independent per folder. The goroutines are owned and waited for here.
func loadAll(dirs []string, opts Options) []Version {
	out := make([]Version, len(dirs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(len(dirs), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = Load(dirs[i], opts)
			}
		}()
	}
	for i := range dirs {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// finish sorts versions and marks folders of one skill that share a semver precedence.
func finish(vs []Version) {
	sort.SliceStable(vs, func(i, j int) bool { return lessVersion(vs[i], vs[j]) })
	for i := 0; i < len(vs); {
		j := i + 1
		for j < len(vs) && vs[j].Skill == vs[i].Skill && vs[i].Semver != nil && vs[j].Semver != nil && vs[j].Semver.Equal(vs[i].Semver) {
			j++
		}
		if j-i > 1 {
			names := make([]string, 0, j-i)
			for k := i; k < j; k++ {
				names = append(names, fmt.Sprintf("%q", vs[k].Version))
			}
			msg := fmt.Sprintf("folders %s of skill %q have the same semver precedence, so neither is newer; remove all but one", strings.Join(names, ", "), vs[i].Skill)
			for k := i; k < j; k++ {
				vs[k].Problems = append(vs[k].Problems, Problem{Path: "folder", Message: msg})
				vs[k].Status = StatusInvalid
				vs[k].EntrypointPath = ""
			}
		}
		i = j
	}
}

func lessVersion(a, b Version) bool {
	if a.Skill != b.Skill {
		return a.Skill < b.Skill
	}
	switch {
	case a.Semver != nil && b.Semver != nil:
		if c := a.Semver.Compare(b.Semver); c != 0 {
			return c < 0
		}
	case a.Semver != nil:
		return true
	case b.Semver != nil:
		return false
	}
	return a.Version < b.Version
}

// Valid returns the valid versions of skill, newest first: the first one is what the host
// serves unless an operator pinned another.
func (t *Tree) Valid(skill string) []Version {
	var out []Version
	for i := len(t.Versions) - 1; i >= 0; i-- {
		if v := t.Versions[i]; v.Skill == skill && v.Status == StatusValid && v.Semver != nil {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Semver.GreaterThan(out[j].Semver) })
	return out
}

// Skills returns every skill folder name seen, sorted, including folders with no valid (or
// no) versions, so a listing can say why a skill is not served.
func (t *Tree) Skills() []string {
	seen := make(map[string]bool)
	for _, s := range t.skills {
		seen[s] = true
	}
	for _, v := range t.Versions {
		seen[v.Skill] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// ValidatePath backs "host validate PATH". PATH may be a version folder (it holds
// manifest.json, or is manifest.json itself), a skill folder (a child holds manifest.json),
// or a whole skills root (anything else). The error is only for a PATH that cannot be read.
func ValidatePath(path string, opts Options) ([]Version, Problems, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("validate %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("validate %s: %w", path, err)
	}
	if !fi.IsDir() {
		if filepath.Base(abs) == agentSkillFile {
			return nil, nil, fmt.Errorf("validate %s: %w", path, ErrAgentSkill)
		}
		if filepath.Base(abs) != FileName {
			return nil, nil, fmt.Errorf("validate %s: not a folder or a %s", path, FileName)
		}
		abs = filepath.Dir(abs)
	}
	if exists(filepath.Join(abs, FileName)) {
		return []Version{Load(abs, opts)}, nil, nil
	}
	if exists(filepath.Join(abs, agentSkillFile)) {
		return nil, nil, fmt.Errorf("validate %s: %w", path, ErrAgentSkill)
	}
	if isSkillFolder(abs) {
		var ps Problems
		if msg := skillNameProblem(filepath.Base(abs)); msg != "" {
			ps = append(ps, Problem{Path: filepath.Base(abs), Message: msg})
		}
		dirs, dps := versionDirs(abs)
		vs := loadAll(dirs, opts)
		finish(vs)
		return vs, append(ps, dps...), nil
	}
	t, err := Scan(abs, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("validate %s: %w", path, err)
	}
	return t.Versions, t.Problems, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func isSkillFolder(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !ignored(e.Name()) && exists(filepath.Join(dir, e.Name(), FileName)) {
			return true
		}
	}
	return false
}

// UsesWarnings names every uses entry of the valid versions in vs that no
// valid version in tree serves: the skill has no valid version there, or
// every one of them lists its tools and none lists this one. (A version
// that lists no tools may serve any name, so it is given the benefit of the
// doubt.) A call to such a name would be refused at run time as an unknown
// tool; "host validate" warns about it without failing, since the skill may
// arrive later.
func UsesWarnings(vs, tree []Version) []string {
	tools := map[string][]string{} // skill → the tools its valid versions list; nil entry: one lists none
	open := map[string]bool{}
	for _, v := range tree {
		if v.Status != StatusValid || v.Manifest == nil {
			continue
		}
		if len(v.Manifest.Tools) == 0 {
			open[v.Skill] = true
		}
		tools[v.Skill] = append(tools[v.Skill], v.Manifest.Tools...)
	}
	var out []string
	for _, v := range vs {
		if v.Status != StatusValid || v.Manifest == nil {
			continue
		}
		for _, u := range v.Manifest.Uses {
			skill, tool, _ := strings.Cut(u, ".")
			listed, ok := tools[skill]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s@%s: uses %s, but no valid version of skill %s is in the tree", v.Skill, v.Version, u, skill))
			case tool != "*" && !open[skill] && !slices.Contains(listed, tool):
				slices.Sort(listed)
				out = append(out, fmt.Sprintf("%s@%s: uses %s, but no version of skill %s lists tool %s (it lists %s)",
					v.Skill, v.Version, u, skill, tool, strings.Join(slices.Compact(listed), ", ")))
			}
		}
	}
	return out
}
