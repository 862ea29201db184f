package manifest

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// nameRE is the skill and tool name rule. Keeping "__" out of names is what lets the
// model-facing "skill__tool" map back to "skill.tool" without a lookup table.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)

// maxSkillNameLen matches the schema's limit on $.name.
const maxSkillNameLen = 32

// maxSymlinks matches Linux's MAXSYMLINKS: following more links than the kernel would is
// pointless, and it is how a loop is recognised.
const maxSymlinks = 40

// Options tune Load and Scan. The zero value checks everything except ownership and modes,
// which suits tests and development trees; the daemon sets StrictModes.
type Options struct {
	// StrictModes refuses, like sshd's StrictModes, a group- or world-writable skills root,
	// skill folder, version folder, manifest or entrypoint (and any folder between the version
	// folder and the entrypoint), and one owned by a user other than root or the current
	// effective uid: whoever can write those can run code as the host.
	StrictModes bool
	// Hashes caches entrypoint digests so a rescan only re-hashes files that changed. May be
	// nil, in which case every Load hashes. Safe to share between concurrent scans.
	Hashes *HashCache
	// DeferHash leaves an entrypoint that Hashes has no digest for unread: the version is
	// judged on everything else, with HashDeferred set, and its Fingerprint is the one it
	// has when the file matches the manifest. It is for a caller that verifies the bytes it
	// runs anyway (the loader hashes the private copy it executes), so that a first start
	// reads each binary once instead of twice.
	DeferHash bool
}

// Version is one version folder as found on disk, with the verdict on it.
type Version struct {
	Skill, Version string // folder names
	Dir            string // absolute path of the version folder
	Status         Status
	Problems       Problems
	// Manifest is nil when manifest.json could not be read or parsed at all. Otherwise it is
	// set even when the version is invalid, so tools can show what it claims.
	Manifest *Manifest
	// Semver is nil when the folder name is not a strict semantic version.
	Semver *semver.Version
	// EntrypointPath is the absolute, symlink-resolved path of the entrypoint; set only when
	// Status is StatusValid.
	EntrypointPath string
	// Fingerprint is a digest over the manifest bytes and the entrypoint's actual sha256. The
	// loader compares it with what serves: any change to either means "reload".
	Fingerprint string
	// HashDeferred says the entrypoint was not compared with $.sha256 (Options.DeferHash):
	// Status is valid as far as everything else goes, and whoever runs the file must check it.
	HashDeferred bool
}

// Load checks one version folder: it reads manifest.json (refusing one over
// MaxManifestBytes unread), runs Parse, then checks the manifest against the folder: the name
// and version must equal the folder names; the entrypoint must stay inside the folder (no
// "..", no absolute path, no symlink out, no symlink loop), be an executable regular file, be
// an ELF binary for runtime.GOARCH or a "#!" script whose interpreter exists, and match its
// sha256. An MCP version ("runtime": "mcp") has no entrypoint: its whole folder must match
// the folder digest instead (see FolderDigest). Everything found is reported, never just
// the first problem.
//
// A checksum mismatch, a missing entrypoint and a missing, empty or truncated manifest make
// the version StatusIncomplete rather than invalid: that is what a copy in progress looks like.
// Any other problem makes it StatusInvalid, which wins over incomplete, since waiting for the
// copy to finish would not fix it.
func Load(dir string, opts Options) Version {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	l := &loader{opts: opts, v: Version{Skill: filepath.Base(filepath.Dir(abs)), Version: filepath.Base(abs), Dir: abs}}
	l.run()
	v := l.v
	switch {
	case l.invalid:
		v.Status = StatusInvalid
	case len(v.Problems) > 0:
		v.Status = StatusIncomplete
	default:
		v.Status = StatusValid
	}
	if v.Status != StatusValid {
		v.EntrypointPath = ""
	}
	return v
}

// loader carries one Load. invalid records whether any problem is of the kind a retry will
// not fix; the rest are incomplete.
type loader struct {
	opts    Options
	v       Version
	invalid bool
}

func (l *loader) bad(path, format string, args ...any) {
	l.invalid = true
	l.v.Problems = append(l.v.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) notYet(path, format string, args ...any) {
	l.v.Problems = append(l.v.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) run() {
	v := &l.v
	if sv, err := semver.StrictNewVersion(v.Version); err != nil {
		l.bad("folder", "version folder name %q is not a strict semantic version (MAJOR.MINOR.PATCH, no leading \"v\")", v.Version)
	} else {
		v.Semver = sv
	}
	if msg := skillNameProblem(v.Skill); msg != "" {
		l.bad("skill-folder", "%s", msg)
	}

	fi, err := os.Stat(v.Dir)
	if err != nil {
		l.bad("folder", "cannot read version folder: %v", err)
		return
	}
	if !fi.IsDir() {
		l.bad("folder", "%s is not a folder", v.Dir)
		return
	}
	if l.opts.StrictModes {
		skillDir := filepath.Dir(v.Dir)
		l.strict("root", "skills root", filepath.Dir(skillDir))
		l.strict("skill-folder", "skill folder", skillDir)
		l.strict("folder", "version folder", v.Dir)
	}

	data, ok := l.readManifest()
	if !ok {
		return
	}
	m, ps, truncated := parse(data)
	for _, p := range ps {
		if truncated {
			l.notYet(p.Path, "%s", p.Message)
		} else {
			l.bad(p.Path, "%s", p.Message)
		}
	}
	v.Manifest = m
	fileSum := ""
	defer func() { v.Fingerprint = fingerprint(data, fileSum) }()
	if m == nil {
		return
	}
	failed := make(map[string]bool, len(ps))
	for _, p := range ps {
		failed[p.Path] = true
	}

	if m.Name != "" && m.Name != v.Skill {
		l.bad("$.name", "%s does not match the skill folder %q", quoteTrunc(m.Name), v.Skill)
	}
	if m.Version != "" && m.Version != v.Version {
		l.bad("$.version", "%s does not match the version folder %q", quoteTrunc(m.Version), v.Version)
	}
	if m.RuntimeName() == RuntimeMCP {
		if m.Digest != "" && !failed["$.digest"] && !failed["$.runtime"] {
			fileSum = l.checkFolder(m)
		}
		return
	}
	if m.Entrypoint == "" || failed["$.entrypoint"] {
		return
	}
	fileSum = l.checkEntrypoint(m, failed["$.sha256"])
}

// checkCommandFile checks an MCP command that names a file of the folder: it must be there
// (else a copy in progress) as an executable regular file, not a link (the digest refuses
// links anyway).
func (l *loader) checkCommandFile(cmd string) {
	q := quoteTrunc(cmd)
	fi, err := os.Lstat(filepath.Join(l.v.Dir, filepath.FromSlash(cmd)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.notYet("$.command", "%s does not exist in the version folder: the copy may be incomplete", q)
	case err != nil:
		l.bad("$.command", "%s cannot be read: %v", q, err)
	case !fi.Mode().IsRegular():
		l.bad("$.command", "%s is not a regular file (%s)", q, fi.Mode().Type())
	case fi.Mode().Perm()&0o111 == 0:
		l.bad("$.command", "%s is not executable (mode %04o); run chmod +x on it", q, fi.Mode().Perm())
	}
}

// checkFolder computes the folder digest of an MCP version and compares it with $.digest; it
// returns the digest ("" when the folder could not be hashed). A mismatch, or a file that
// changed or went away during the walk, is a copy in progress: incomplete. A file the digest
// cannot vouch for (a link, a device) or a folder over the caps is invalid. Under DeferHash
// the folder is not read: the loader hashes the private copy it runs.
func (l *loader) checkFolder(m *Manifest) string {
	if strings.Contains(m.Command, "/") {
		l.checkCommandFile(m.Command)
	}
	want := m.DigestHex()
	if l.opts.DeferHash {
		l.v.HashDeferred = true
		return want
	}
	got, err := l.opts.Hashes.folderDigest(l.v.Dir)
	switch {
	case errors.Is(err, ErrUnsupportedFile), errors.Is(err, ErrFolderTooLarge):
		l.bad("folder", "%v", err)
		return ""
	case errors.Is(err, errChangedWhileHashing), errors.Is(err, fs.ErrNotExist):
		l.notYet("folder", "%v: the copy may be incomplete", err)
		return ""
	case err != nil:
		l.bad("folder", "cannot hash the version folder: %v", err)
		return ""
	case got != want:
		l.notYet("$.digest", "folder digest mismatch (manifest %s…, folder %s…): the copy may be incomplete", want[:12], got[:12])
	}
	return got
}

// readManifest reads manifest.json, size-capped. It refuses a symlinked manifest: what the
// folder says about itself must live in the folder.
func (l *loader) readManifest() ([]byte, bool) {
	p := filepath.Join(l.v.Dir, FileName)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.notYet("manifest", "%s is missing: the copy may be incomplete", FileName)
		return nil, false
	case err != nil:
		l.bad("manifest", "cannot read %s: %v", FileName, err)
		return nil, false
	case fi.Mode()&fs.ModeSymlink != 0:
		l.bad("manifest", "%s is a symlink; it must be a regular file in the version folder", FileName)
		return nil, false
	case !fi.Mode().IsRegular():
		l.bad("manifest", "%s is not a regular file (%s)", FileName, fi.Mode().Type())
		return nil, false
	case fi.Size() > MaxManifestBytes:
		l.bad("manifest", "%s is %d bytes, over the %d-byte limit; it was not read", FileName, fi.Size(), MaxManifestBytes)
		return nil, false
	}
	if l.opts.StrictModes {
		l.strict("manifest", FileName, p)
	}
	f, err := os.Open(p)
	if err != nil {
		l.bad("manifest", "cannot read %s: %v", FileName, err)
		return nil, false
	}
	defer f.Close()
	// The cap is enforced on the read too: the file may have grown since the Lstat.
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		l.bad("manifest", "cannot read %s: %v", FileName, err)
		return nil, false
	}
	if len(data) > MaxManifestBytes {
		l.bad("manifest", "%s is over the %d-byte limit; it was not read", FileName, MaxManifestBytes)
		return nil, false
	}
	return data, true
}

// checkEntrypoint runs the filesystem checks on the entrypoint and returns its actual sha256
// ("" when it could not be hashed). shaUnusable means $.sha256 already failed the schema, so
// there is nothing to compare against.
func (l *loader) checkEntrypoint(m *Manifest, shaUnusable bool) string {
	realDir, err := filepath.EvalSymlinks(l.v.Dir)
	if err != nil {
		l.bad("folder", "cannot resolve version folder: %v", err)
		return ""
	}
	ep := m.Entrypoint
	q := quoteTrunc(ep)
	resolved, err := resolveInside(realDir, ep)
	var esc *escapeError
	switch {
	case errors.As(err, &esc):
		l.bad("$.entrypoint", "%s escapes the version folder (symlink %q points to %q)", q, esc.link, esc.target)
		return ""
	case errors.Is(err, errSymlinkLoop):
		l.bad("$.entrypoint", "%s is a symlink loop (more than %d links to follow)", q, maxSymlinks)
		return ""
	case errors.Is(err, fs.ErrNotExist):
		l.notYet("$.entrypoint", "%s does not exist in the version folder: the copy may be incomplete", q)
		return ""
	case err != nil:
		l.bad("$.entrypoint", "%s cannot be resolved: %v", q, err)
		return ""
	}

	fi, err := os.Lstat(resolved)
	if err != nil {
		l.bad("$.entrypoint", "%s cannot be read: %v", q, err)
		return ""
	}
	if !fi.Mode().IsRegular() {
		kind := "not a regular file"
		if fi.IsDir() {
			kind = "a folder, not a file"
		}
		l.bad("$.entrypoint", "%s is %s", q, kind)
		return ""
	}
	l.v.EntrypointPath = resolved
	if fi.Mode().Perm()&0o111 == 0 {
		l.bad("$.entrypoint", "%s is not executable (mode %04o); run chmod +x on it", q, fi.Mode().Perm())
	}
	if l.opts.StrictModes {
		for d := filepath.Dir(resolved); d != realDir && strings.HasPrefix(d, realDir+string(filepath.Separator)); d = filepath.Dir(d) {
			rel, _ := filepath.Rel(realDir, d)
			l.strict("$.entrypoint", "folder "+rel, d)
		}
		l.strict("$.entrypoint", "entrypoint "+q, resolved)
	}

	var sum string
	if l.opts.DeferHash && !shaUnusable {
		var known bool
		if sum, known, err = l.opts.Hashes.cached(resolved); err == nil && !known {
			l.v.HashDeferred = true
			l.checkFormat(resolved, q)
			return m.SHA256 // what the fingerprint holds when the file matches
		}
	} else {
		sum, err = l.opts.Hashes.hashFile(resolved)
	}
	switch {
	case errors.Is(err, errChangedWhileHashing):
		l.notYet("$.entrypoint", "%s changed while it was being hashed: the copy may be incomplete", q)
		return ""
	case err != nil:
		l.bad("$.entrypoint", "%s cannot be hashed: %v", q, err)
		return ""
	}
	if !shaUnusable && sum != m.SHA256 {
		l.notYet("$.sha256", "sha256 mismatch (manifest %s…, file %s…): the copy may be incomplete", m.SHA256[:12], sum[:12])
		// The bytes are not the ones the manifest describes, so judging their format would
		// only produce noise about a half-written file.
		return sum
	}
	l.checkFormat(resolved, q)
	return sum
}

// checkFormat makes sure the kernel will be able to run the file, so a wrong-architecture
// build fails here with a clear reason instead of as "exec format error" at launch.
func (l *loader) checkFormat(path, q string) {
	f, err := os.Open(path)
	if err != nil {
		l.bad("$.entrypoint", "%s cannot be read: %v", q, err)
		return
	}
	defer f.Close()
	head := make([]byte, 256) // Linux reads at most this much of a "#!" line
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		if msg := elfProblem(f); msg != "" {
			l.bad("$.entrypoint", "%s %s", q, msg)
		}
	case bytes.HasPrefix(head, []byte("#!")):
		if msg := shebangProblem(head); msg != "" {
			l.bad("$.entrypoint", "%s %s", q, msg)
		}
	case runtime.GOOS == "linux":
		l.bad("$.entrypoint", "%s is neither an ELF executable nor a \"#!\" script, so linux cannot run it", q)
	}
}

// elfArch is what an ELF file must say to run on one GOARCH.
type elfArch struct {
	machine elf.Machine
	class   elf.Class
	order   binary.ByteOrder
}

var elfArches = map[string]elfArch{
	"386":      {elf.EM_386, elf.ELFCLASS32, binary.LittleEndian},
	"amd64":    {elf.EM_X86_64, elf.ELFCLASS64, binary.LittleEndian},
	"arm":      {elf.EM_ARM, elf.ELFCLASS32, binary.LittleEndian},
	"arm64":    {elf.EM_AARCH64, elf.ELFCLASS64, binary.LittleEndian},
	"loong64":  {elf.EM_LOONGARCH, elf.ELFCLASS64, binary.LittleEndian},
	"mips":     {elf.EM_MIPS, elf.ELFCLASS32, binary.BigEndian},
	"mipsle":   {elf.EM_MIPS, elf.ELFCLASS32, binary.LittleEndian},
	"mips64":   {elf.EM_MIPS, elf.ELFCLASS64, binary.BigEndian},
	"mips64le": {elf.EM_MIPS, elf.ELFCLASS64, binary.LittleEndian},
	"ppc64":    {elf.EM_PPC64, elf.ELFCLASS64, binary.BigEndian},
	"ppc64le":  {elf.EM_PPC64, elf.ELFCLASS64, binary.LittleEndian},
	"riscv64":  {elf.EM_RISCV, elf.ELFCLASS64, binary.LittleEndian},
	"s390x":    {elf.EM_S390, elf.ELFCLASS64, binary.BigEndian},
}

func elfProblem(r io.ReaderAt) string {
	ef, err := elf.NewFile(r)
	if err != nil {
		return fmt.Sprintf("starts like an ELF file but is not a valid one: %v", err)
	}
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return fmt.Sprintf("is an ELF file of type %v, not an executable", ef.Type)
	}
	want, known := elfArches[runtime.GOARCH]
	if !known {
		return ""
	}
	if ef.Machine != want.machine || ef.Class != want.class || ef.ByteOrder != want.order {
		return fmt.Sprintf("is an ELF binary for %v (%v, %v), but this host is %s/%s (%v); rebuild it with GOARCH=%s",
			ef.Machine, ef.Class, ef.ByteOrder, runtime.GOOS, runtime.GOARCH, want.machine, runtime.GOARCH)
	}
	return ""
}

// shebangProblem checks the "#!" line the kernel would read; a missing interpreter otherwise
// shows up as a baffling "no such file or directory" for a file that plainly exists.
func shebangProblem(head []byte) string {
	line, _, found := bytes.Cut(head[2:], []byte("\n"))
	if !found && len(head) >= 256 {
		return "has a \"#!\" line longer than 255 bytes, which the kernel cuts short"
	}
	if bytes.HasSuffix(line, []byte("\r")) {
		return "has a \"#!\" line ending in \\r (Windows line endings); the kernel would look for an interpreter name ending in \\r"
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return "has a \"#!\" line that names no interpreter"
	}
	interp := fields[0]
	if !filepath.IsAbs(interp) {
		return fmt.Sprintf("names the interpreter %q, which is not an absolute path", interp)
	}
	fi, err := os.Stat(interp)
	switch {
	case err != nil:
		return fmt.Sprintf("names the interpreter %q, which does not exist on this host", interp)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("names the interpreter %q, which is not an executable file", interp)
	}
	return ""
}

// strict reports path if, under StrictModes, someone other than root or us could change it.
func (l *loader) strict(locator, what, path string) {
	for _, msg := range strictProblems(what, path) {
		l.bad(locator, "%s", msg)
	}
}

func strictProblems(what, path string) []string {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // reported by whichever check needs the file
	}
	var out []string
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := "world"
		if perm&0o002 == 0 {
			who = "group"
		}
		out = append(out, fmt.Sprintf("%s (%s) is %s-writable (mode %04o); StrictModes refuses it because anyone who can write it can run code as the host", what, path, who, perm))
	}
	if uid, me := fileOwner(fi), os.Geteuid(); uid >= 0 && uid != 0 && uid != me {
		out = append(out, fmt.Sprintf("%s (%s) is owned by uid %d, not root or the host's uid %d; StrictModes refuses it", what, path, uid, me))
	}
	return out
}

// errSymlinkLoop is returned by resolveInside when following links never ends.
var errSymlinkLoop = errors.New("too many levels of symbolic links")

// escapeError is returned by resolveInside when a symlink leads out of the folder.
type escapeError struct{ link, target string }

func (e *escapeError) Error() string {
	return fmt.Sprintf("symlink %q points to %q, outside the folder", e.link, e.target)
}

// resolveInside resolves rel under root (a real, symlink-free path) one element at a time,
// refusing any step that leaves root, even one that would come back later. filepath.EvalSymlinks
// alone would say where a path ends up, but not that it passed through a folder someone else
// controls, and it cannot tell a loop from a missing file.
func resolveInside(root, rel string) (string, error) {
	cur := root
	rest := strings.Split(rel, "/")
	links := 0
	lastLink := ""
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if cur == root {
				return "", &escapeError{link: lastLink, target: ".."}
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, elem)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(rest) > 0 && !fi.IsDir() {
				return "", fmt.Errorf("%s is not a folder", next)
			}
			cur = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", errSymlinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		lastLink, _ = filepath.Rel(root, next)
		if filepath.IsAbs(target) {
			t := filepath.Clean(target)
			if t != root && !strings.HasPrefix(t, root+string(filepath.Separator)) {
				return "", &escapeError{link: lastLink, target: target}
			}
			r, _ := filepath.Rel(root, t)
			cur = root
			rest = append(strings.Split(filepath.ToSlash(r), "/"), rest...)
			continue
		}
		// A relative target is relative to the folder holding the link; ".." steps in it are
		// checked like any other.
		steps := strings.Split(filepath.ToSlash(target), "/")
		if escapes(root, cur, steps) {
			return "", &escapeError{link: lastLink, target: target}
		}
		rest = append(steps, rest...)
	}
	return cur, nil
}

// escapes reports whether the ".." steps of a relative link target climb above root when
// taken from cur. Checking before following gives the message the link itself, not "..".
func escapes(root, cur string, steps []string) bool {
	depth := 0
	if rel, err := filepath.Rel(root, cur); err == nil && rel != "." {
		depth = len(strings.Split(rel, string(filepath.Separator)))
	}
	for _, s := range steps {
		switch s {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// skillNameProblem returns why a skill folder name is not a valid skill name, or "".
func skillNameProblem(name string) string {
	switch {
	case !nameRE.MatchString(name):
		return fmt.Sprintf("skill folder name %q is not a valid skill name (lowercase letters and digits, words joined by a single _ or -)", name)
	case len(name) > maxSkillNameLen:
		return fmt.Sprintf("skill folder name %q is %d characters, the maximum is %d", name, len(name), maxSkillNameLen)
	}
	return ""
}

// fingerprint digests what decides how a version runs. The file's actual digest is used, not
// the manifest's claim, so a binary that changes under an unchanged manifest still changes it.
func fingerprint(manifest []byte, fileSum string) string {
	h := sha256.New()
	h.Write([]byte("skillhost-fingerprint-v1\x00"))
	h.Write(manifest)
	h.Write([]byte{0})
	h.Write([]byte(fileSum))
	return hex.EncodeToString(h.Sum(nil))
}
