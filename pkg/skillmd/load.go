package skillmd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Layout says where SKILL.md sits in the tree.
type Layout int

const (
	// Unversioned: skills/<name>/SKILL.md, as public collections ship skills. The version
	// comes from metadata.version, or from the folder's digest (see Load).
	Unversioned Layout = iota
	// Versioned: skills/<name>/<version>/SKILL.md, like binary skills; the version folder
	// name is the version.
	Versioned
)

// VersionSource says where Skill.Version came from.
type VersionSource string

const (
	VersionFromFolder   VersionSource = "folder"   // the version folder's name
	VersionFromMetadata VersionSource = "metadata" // metadata.version of an unversioned folder
	VersionFromField    VersionSource = "version"  // a top-level "version" (not in the specification, but common)
	VersionFromDigest   VersionSource = "digest"   // 0.0.0+sha256.<12 hex> of an unversioned folder
)

// FileKind groups a skill's files the way the specification names its folders.
type FileKind string

const (
	KindInstructions FileKind = "instructions" // SKILL.md
	KindScript       FileKind = "script"       // under scripts/
	KindReference    FileKind = "reference"    // under references/
	KindAsset        FileKind = "asset"        // under assets/
	KindOther        FileKind = "other"
)

// File is one file of a skill folder as the walk found it.
type File struct {
	// Path is relative to the skill folder, with "/" separators.
	Path string   `json:"path"`
	Size int64    `json:"size"`
	Kind FileKind `json:"kind"`
	// Served is false for a file over MaxFileBytes: it is listed so a reader knows it exists,
	// and never read.
	Served bool `json:"served"`
	// SHA256 is the hex digest of a served file's content as the load hashed it, so a client
	// can verify what it is later handed (the MCP skills extension lists files with digests).
	SHA256 string `json:"sha256,omitempty"`
	// id is the file's identity (device, inode) at the walk; Open refuses a file that is no
	// longer the same one.
	id fileID
	// stamp keys the file's sum in a Cache.
	stamp stamp
}

// Skill is one Agent Skill folder as found on disk, with the verdict on it. It is a plain
// value: its methods read the folder but never change the Skill, so one may be shared by
// concurrent readers.
type Skill struct {
	// Name is the skill folder's name: the skill's identity, whatever the front matter says.
	Name string `json:"name"`
	// Version is the version folder's name, metadata.version, or a digest pseudo-version;
	// VersionFrom says which.
	Version     string        `json:"version"`
	VersionFrom VersionSource `json:"version_from"`
	Layout      Layout        `json:"-"`
	// Dir is the absolute path of the folder holding SKILL.md.
	Dir      string   `json:"dir"`
	Status   Status   `json:"status"`
	Problems Problems `json:"problems,omitempty"`
	// Doc is nil when SKILL.md could not be read or its front matter parsed. Otherwise it is
	// set even when the skill is invalid, so tools can show what it claims.
	Doc *Document `json:"document,omitempty"`
	// Files lists the folder's files, sorted by path: SKILL.md and everything beside it except
	// hidden names (starting with "."), symlinks that lead out of the folder or to folders,
	// files that are not regular, and the binary side of a tied skill.
	Files []File `json:"files,omitempty"`
	// Digest is the hex sha256 over every listed file's path and size and every served file's
	// content: the fingerprint the loader compares to decide on a reload.
	Digest string `json:"digest,omitempty"`
	// Tied says the folder also holds a manifest.json: a binary skill whose tools the
	// instructions describe how to use (see NamedTools).
	Tied bool `json:"tied"`
}

// manifestFile is the binary side's manifest, pkg/manifest's FileName (not imported:
// test/arch keeps both packages leaves).
const manifestFile = "manifest.json"

// maxManifestBytes mirrors pkg/manifest's cap; only the entrypoint is read here.
const maxManifestBytes = 64 << 10

// semverRE is a strict semantic version (semver.org's own expression).
var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// looseVersionRE is what authors write when they mean a version: "1.0", "v2", "1.2.3".
var looseVersionRE = regexp.MustCompile(`^v?(\d{1,9})(?:\.(\d{1,9}))?(?:\.(\d{1,9}))?$`)

// Load judges one skill folder: dir holds SKILL.md, and layout says whether dir is the skill
// folder itself or a version folder inside it. It reads SKILL.md (refusing one over
// MaxSkillMDBytes or a symlink), runs Parse, checks the folder names, lists and hashes the
// folder's files, and works out the version. Everything found is reported, never just the first
// problem.
//
// An unversioned folder is versioned by its metadata.version when that reads as a version
// ("1.2.0", or "1.0" and "v1" completed to "1.0.0" and "1.0.0"), or else by a top-level
// "version" read the same way, else by the pseudo-version 0.0.0+sha256.<first 12 hex digits
// of Digest>, so every edit is a new version and a hot reload swaps it in. Either way Digest
// changes with any edit, and the loader reloads on it.
//
// A missing or empty SKILL.md, front matter that is never closed, and a file that changes
// while it is read make the skill StatusIncomplete: what a copy in progress looks like. Any
// other error makes it StatusInvalid, which wins. Warnings leave it StatusValid.
func Load(dir string, layout Layout) Skill { return load(dir, layout, nil) }

func load(dir string, layout Layout, cache *Cache) Skill {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	l := &loadState{s: Skill{Dir: abs, Layout: layout, Name: filepath.Base(abs)}, cache: cache}
	if layout == Versioned {
		l.s.Name = filepath.Base(filepath.Dir(abs))
		l.s.Version = filepath.Base(abs)
		l.s.VersionFrom = VersionFromFolder
	}
	l.run()
	s := l.s
	switch {
	case l.invalid:
		s.Status = StatusInvalid
	case len(s.Problems.Errors()) > 0:
		s.Status = StatusIncomplete
	default:
		s.Status = StatusValid
	}
	return s
}

// loadState carries one Load. invalid records whether any error is of the kind a retry will
// not fix; the other errors are incomplete.
type loadState struct {
	s       Skill
	invalid bool
	cache   *Cache // may be nil
}

func (l *loadState) bad(file, format string, args ...any) {
	l.invalid = true
	l.s.Problems = append(l.s.Problems, Problem{File: file, Message: fmt.Sprintf(format, args...)})
}

func (l *loadState) notYet(file, format string, args ...any) {
	l.s.Problems = append(l.s.Problems, Problem{File: file, Message: fmt.Sprintf(format, args...)})
}

func (l *loadState) warn(file, format string, args ...any) {
	l.s.Problems = append(l.s.Problems, Problem{File: file, Message: fmt.Sprintf(format, args...), Warning: true})
}

func (l *loadState) run() {
	s := &l.s
	// A tied skill's folder names are judged by pkg/manifest, whose name rule allows "_".
	tied := exists(filepath.Join(s.Dir, manifestFile))
	for _, msg := range nameProblems(s.Name) {
		if tied {
			l.warn("", "skill folder name: %s, so other Agent Skills clients may refuse it", msg)
			continue
		}
		l.bad("", "skill folder name: %s; the folder name is the skill's name", msg)
	}
	if s.Name == "" || s.Name == "." || s.Name == string(filepath.Separator) {
		return
	}
	if s.Layout == Versioned && !tied && !semverRE.MatchString(s.Version) {
		l.bad("", "version folder name %s is not a strict semantic version (MAJOR.MINOR.PATCH, no leading \"v\")", quoteTrunc(s.Version))
	}
	fi, err := os.Stat(s.Dir)
	if err != nil {
		l.bad("", "cannot read the skill folder: %v", err)
		return
	}
	if !fi.IsDir() {
		l.bad("", "%s is not a folder", s.Dir)
		return
	}
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		l.bad("", "cannot open the skill folder: %v", err)
		return
	}
	defer root.Close()

	if data, ok := l.readSkillMD(root); ok {
		doc, ps, incomplete := parse(data)
		for _, p := range ps {
			if !p.Warning && !incomplete {
				l.invalid = true
			}
			s.Problems = append(s.Problems, p)
		}
		s.Doc = doc
		if doc != nil && doc.Name != "" && doc.Name != s.Name && len(nameProblems(doc.Name)) == 0 {
			l.s.Problems = append(l.s.Problems, Problem{File: FileName, Field: "name", Warning: true,
				Message: fmt.Sprintf("%s does not match the skill folder %q; the skill is served as %q", quoteTrunc(doc.Name), s.Name, s.Name)})
		}
	}

	exclude := l.tiedFiles(root)
	l.walk(root, exclude)
	l.hash(root)
	l.version()
}

// readSkillMD reads SKILL.md, size-capped. It refuses a symlinked SKILL.md: what the folder
// says about itself must live in the folder.
func (l *loadState) readSkillMD(root *os.Root) ([]byte, bool) {
	fi, err := root.Lstat(FileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.notYet(FileName, "is missing: the copy may be incomplete")
		return nil, false
	case err != nil:
		l.bad(FileName, "cannot be read: %v", err)
		return nil, false
	case fi.Mode()&fs.ModeSymlink != 0:
		l.bad(FileName, "is a symlink; it must be a regular file in the skill folder")
		return nil, false
	case !fi.Mode().IsRegular():
		l.bad(FileName, "is not a regular file (%s)", fi.Mode().Type())
		return nil, false
	case fi.Size() > MaxSkillMDBytes:
		l.bad(FileName, "is %d bytes, over the %d-byte limit; it was not read", fi.Size(), MaxSkillMDBytes)
		return nil, false
	}
	data, err := readCapped(root, FileName, fileIDOf(fi), MaxSkillMDBytes)
	switch {
	case errors.Is(err, ErrChanged):
		l.notYet(FileName, "changed while it was read: the copy may be incomplete")
		return nil, false
	case err != nil:
		l.bad(FileName, "cannot be read: %v", err)
		return nil, false
	}
	return data, true
}

// tiedFiles notes a manifest.json beside SKILL.md and returns the files of the binary side,
// which are neither listed nor served: a model is never handed a binary or its manifest, and
// pkg/manifest's fingerprint covers them. The manifest itself is judged by pkg/manifest; here
// only its entrypoint is read.
func (l *loadState) tiedFiles(root *os.Root) map[string]bool {
	if _, err := root.Lstat(manifestFile); err != nil {
		return nil
	}
	l.s.Tied = true
	if l.s.Layout == Unversioned {
		l.bad(manifestFile, "a binary skill lives in a version folder (skills/%s/<version>/manifest.json); move SKILL.md, manifest.json and the binary there together", l.s.Name)
	}
	exclude := map[string]bool{manifestFile: true}
	var m struct {
		Entrypoint string `json:"entrypoint"`
	}
	if fi, err := root.Lstat(manifestFile); err == nil && fi.Mode().IsRegular() && fi.Size() <= maxManifestBytes {
		if data, err := root.ReadFile(manifestFile); err == nil && json.Unmarshal(data, &m) == nil {
			if ep := path.Clean(m.Entrypoint); fs.ValidPath(ep) && ep != "." {
				exclude[ep] = true
			}
		}
	}
	return exclude
}

// walk lists the folder's files into s.Files. It walks through root, so no step of it leaves
// the folder, and it never follows a symlinked folder.
func (l *loadState) walk(root *os.Root, exclude map[string]bool) {
	var files []File
	full := false
	entries := 0
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if p == "." {
			return err
		}
		// Folders count too, so a tree of empty folders cannot make every rescan slow.
		if entries++; entries > MaxFiles {
			full = true
			return fs.SkipAll
		}
		if err != nil {
			l.warn(p, "cannot be read (%v); not listed", err)
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if strings.Count(p, "/")+1 > MaxDepth {
				l.warn(p, "is more than %d folders deep; its files are not listed or served", MaxDepth)
				return fs.SkipDir
			}
			return nil
		}
		if exclude[p] {
			return nil
		}
		if dir, file, _ := strings.Cut(p, "/"); l.s.Layout == Unversioned && file == manifestFile && semverRE.MatchString(dir) {
			// SKILL.md here makes the folder an unversioned Agent Skill, whose subfolders are
			// its files; a binary version beside it is not tied to it.
			l.bad(p, "a binary version sits beside an unversioned SKILL.md, which makes its folder the skill's files; to tie them, move SKILL.md into %s/ (and into every other version folder)", dir)
		}
		var fi fs.FileInfo
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if fi = l.symlink(root, p); fi == nil {
				return nil
			}
		case d.Type().IsRegular():
			if fi, err = d.Info(); err != nil {
				l.warn(p, "cannot be read (%v); not listed", err)
				return nil
			}
		default:
			l.warn(p, "is not a regular file (%s); not served", d.Type())
			return nil
		}
		files = append(files, File{Path: p, Size: fi.Size(), Kind: kindOf(p), Served: true, id: fileIDOf(fi),
			stamp: stampOf(filepath.Join(l.s.Dir, filepath.FromSlash(p)), fi)})
		return nil
	})
	if err != nil {
		l.bad("", "cannot list the skill folder: %v", err)
	}
	if full {
		l.bad("", "holds more than %d files and folders; an instruction skill this large is refused (hidden ones are not counted)", MaxFiles)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	l.s.Files = files
}

// symlink resolves a symlink found by the walk. A link to a file inside the folder is served
// as that file; a link out of the folder, to a folder, or to nothing is left out with a
// warning: a copy of a collection may well hold such links, and leaving one file out is safer
// and kinder than refusing the skill.
func (l *loadState) symlink(root *os.Root, p string) fs.FileInfo {
	target, err := root.Readlink(p)
	if err != nil {
		l.warn(p, "is a symlink that cannot be read (%v); not served", err)
		return nil
	}
	if escapes(p, target) {
		l.warn(p, "is a symlink to %s, outside the skill folder; not served", quoteTrunc(target))
		return nil
	}
	// root.Stat resolves every link on the way inside the folder, and fails on any that
	// leaves it, so a chain of links that only looks inside is caught here.
	fi, err := root.Stat(p)
	switch {
	case err != nil:
		l.warn(p, "is a symlink to %s that does not resolve inside the skill folder; not served", quoteTrunc(target))
		return nil
	case fi.IsDir():
		l.warn(p, "is a symlink to a folder; symlinked folders are not followed, so its files are not served")
		return nil
	case !fi.Mode().IsRegular():
		l.warn(p, "is a symlink to something that is not a regular file (%s); not served", fi.Mode().Type())
		return nil
	}
	return fi
}

// escapes reports whether a symlink at p (relative to the folder) with the given target
// points outside the folder by its text alone: an absolute target, or ".." steps that climb
// above the folder.
func escapes(p, target string) bool {
	if filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return true
	}
	depth := strings.Count(p, "/")
	for _, step := range strings.Split(filepath.ToSlash(target), "/") {
		switch step {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

func kindOf(p string) FileKind {
	top, _, nested := strings.Cut(p, "/")
	switch {
	case p == FileName:
		return KindInstructions
	case !nested:
		return KindOther
	case top == "scripts":
		return KindScript
	case top == "references":
		return KindReference
	case top == "assets":
		return KindAsset
	}
	return KindOther
}

// hash reads every listed file through root (or takes its sum from the cache), checks it is
// still the file the walk found, and digests paths, sizes and the files' SHA-256. Files over
// MaxFileBytes are marked unserved and count by path and size only.
func (l *loadState) hash(root *os.Root) {
	h := sha256.New()
	h.Write([]byte("skillhost-skillmd-v2\x00"))
	var total int64
	for i := range l.s.Files {
		f := &l.s.Files[i]
		if f.Size > MaxFileBytes {
			f.Served = false
			l.warn(f.Path, "is %d bytes, over the %d-byte limit of a served file; listed but not served", f.Size, MaxFileBytes)
		}
		fmt.Fprintf(h, "%s\x00%d\x00%t\x00", f.Path, f.Size, f.Served)
		if !f.Served {
			continue
		}
		if total += f.Size; total > MaxFolderBytes {
			l.bad("", "its served files add up to more than %d bytes; an instruction skill this large is refused", MaxFolderBytes)
			return
		}
		sum, err := l.cache.fileSum(root, l.s.Dir, *f)
		switch {
		case errors.Is(err, ErrChanged):
			l.notYet(f.Path, "changed while it was read: the copy may be incomplete")
			return
		case err != nil:
			l.bad(f.Path, "cannot be read: %v", err)
			return
		}
		h.Write(sum[:])
		f.SHA256 = hex.EncodeToString(sum[:])
	}
	l.s.Digest = hex.EncodeToString(h.Sum(nil))
}

// version works out the version of an unversioned folder, and checks the written version
// against the version folder of a versioned one. The written version is metadata.version, or,
// failing that, a top-level "version", which many published skills use although the
// specification does not define it.
func (l *loadState) version() {
	s := &l.s
	written, field, from := "", "metadata.version", VersionFromMetadata
	if s.Doc != nil {
		written = s.Doc.Metadata["version"]
		if top, ok := s.Doc.Extra["version"].(string); written == "" && ok {
			written, field, from = top, "version", VersionFromField
		}
	}
	v, ok := coerceVersion(written)
	warn := func(format string, args ...any) {
		s.Problems = append(s.Problems, Problem{File: FileName, Field: field, Warning: true, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case s.Layout == Versioned:
		if written != "" && ok && v != s.Version {
			warn("%s differs from the version folder %q; the folder's name is the version", quoteTrunc(written), s.Version)
		}
		return
	case ok:
		s.Version, s.VersionFrom = v, from
		return
	case written != "":
		warn("%s is not a version (like 1.2.0); the skill is versioned by its content instead", quoteTrunc(written))
	}
	s.Version, s.VersionFrom = "0.0.0", VersionFromDigest
	if len(s.Digest) >= 12 {
		s.Version += "+sha256." + s.Digest[:12]
	}
}

// coerceVersion reads what an author wrote as a version: a strict semantic version as is
// (after an optional "v"), or one to three numbers completed with zeros ("1.0" is 1.0.0).
func coerceVersion(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if t := strings.TrimPrefix(s, "v"); semverRE.MatchString(t) {
		return t, true
	}
	m := looseVersionRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	n := [3]int{}
	for i, part := range m[1:] {
		if part != "" {
			n[i], _ = strconv.Atoi(part)
		}
	}
	return fmt.Sprintf("%d.%d.%d", n[0], n[1], n[2]), true
}

// ignored reports names Scan skips, as pkg/manifest does: dot files, and "_" folders where
// installers stage a copy before renaming it into place.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// Scan finds every Agent Skill under a skills root and loads it: root/<name>/SKILL.md
// (unversioned) and root/<name>/<version>/SKILL.md (versioned). A skill folder that holds
// SKILL.md is unversioned, and its subfolders are its files, never versions. Folders without
// SKILL.md (binary skills) are skipped. The result is sorted by name, then version. The only
// error is a root that cannot be read.
func Scan(root string) ([]Skill, error) { return scan(root, nil) }

func scan(root string, cache *Cache) ([]Skill, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("scan skills root: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("scan skills root: %w", err)
	}
	var out []Skill
	for _, e := range entries {
		dir := filepath.Join(abs, e.Name())
		if ignored(e.Name()) || !isDir(dir) {
			continue
		}
		if exists(filepath.Join(dir, FileName)) {
			out = append(out, load(dir, Unversioned, cache))
			continue
		}
		versions, err := os.ReadDir(dir)
		if err != nil {
			continue // pkg/manifest reports an unreadable skill folder
		}
		for _, v := range versions {
			vdir := filepath.Join(dir, v.Name())
			if !ignored(v.Name()) && isDir(vdir) && exists(filepath.Join(vdir, FileName)) {
				out = append(out, load(vdir, Versioned, cache))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// IsSkillFolder reports whether dir holds a SKILL.md directly (an unversioned skill folder,
// or a version folder of a versioned one).
func IsSkillFolder(dir string) bool { return exists(filepath.Join(dir, FileName)) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// isDir follows a symlink, as pkg/manifest does, so a development tree may link a skill folder.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
