package mcprt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Interpreters is the operator's allow map: the only host programs a
// manifest can run, each under a logical name ("node" → "/usr/bin/node").
// It implements flag.Value, so a repeated --runtime name=/path flag fills it.
// A nil map allows no interpreter: only files inside a version folder run.
type Interpreters map[string]string

// interpNameRE is what a logical interpreter name may look like: short and
// plain, so it can never be mistaken for a path ("python3.12", "node").
var interpNameRE = regexp.MustCompile(`^[a-z][a-z0-9._+-]{0,63}$`)

// Set adds one name=/absolute/path entry; it is flag.Value's Set. The path
// must name an executable regular file now, so that a typo fails the host at
// start rather than every skill that needs the interpreter later.
func (m Interpreters) Set(entry string) error {
	name, path, ok := strings.Cut(entry, "=")
	switch {
	case !ok:
		return fmt.Errorf("%w %q: want name=/absolute/path, e.g. node=/usr/bin/node", ErrBadInterpreter, entry)
	case !interpNameRE.MatchString(name):
		return fmt.Errorf("%w %q: the name must match %s", ErrBadInterpreter, entry, interpNameRE)
	case !filepath.IsAbs(path) || filepath.Clean(path) != path:
		return fmt.Errorf("%w %q: the path must be absolute and clean", ErrBadInterpreter, entry)
	}
	if err := executableFile(path, os.Stat); err != nil {
		return fmt.Errorf("%w %q: %w", ErrBadInterpreter, entry, err)
	}
	if old, dup := m[name]; dup && old != path {
		return fmt.Errorf("%w %q: %s is already %s", ErrBadInterpreter, entry, name, old)
	}
	m[name] = path
	return nil
}

// String lists the entries sorted, as name=path separated by commas.
func (m Interpreters) String() string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = n + "=" + m[n]
	}
	return strings.Join(names, ",")
}

func (m Interpreters) names() string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Limits on a manifest's command line, far above any real server's.
const (
	maxArgs     = 64
	maxArgBytes = 4096
)

// Spec is the runtime part of a "runtime": "mcp" manifest: what to run and
// what the version folder must hash to. The loader fills it from the
// manifest's command, args and digest (SHA256 is the digest's hex, without
// its "sha256:").
type Spec struct {
	// Command is a logical interpreter name from the operator's allow map
	// ("node"), or a path to an executable file inside the version folder,
	// which must contain a slash ("./server", "bin/server"). A bare name is
	// never looked up in PATH.
	Command string
	// Args are passed as they are; the working directory is the private
	// copy of the version folder, so relative paths name its files.
	Args []string
	// SHA256 is the folder digest (see FolderDigest), 64 lowercase hex.
	SHA256 string
}

// Check reports every problem of s at once without touching the file
// system: the command's form against the allow map, the arguments' sizes and
// the digest's form. A file command is checked for existence at launch, in
// the verified copy.
func (s Spec) Check(interp Interpreters) error {
	var errs []error
	if _, _, err := commandKind(s.Command, interp); err != nil {
		errs = append(errs, err)
	}
	if len(s.Args) > maxArgs {
		errs = append(errs, fmt.Errorf("args: %d arguments, over the cap of %d", len(s.Args), maxArgs))
	}
	for i, a := range s.Args {
		if len(a) > maxArgBytes {
			errs = append(errs, fmt.Errorf("args[%d]: %d bytes, over the cap of %d", i, len(a), maxArgBytes))
		}
		if strings.IndexByte(a, 0) >= 0 {
			errs = append(errs, fmt.Errorf("args[%d]: contains a NUL byte", i))
		}
	}
	if !validDigest(s.SHA256) {
		errs = append(errs, fmt.Errorf("sha256 %q: want the folder digest, 64 lowercase hex digits", s.SHA256))
	}
	return errors.Join(errs...)
}

// commandKind classifies a manifest command: an allowed interpreter (path
// is the operator's) or a file relative to the version folder (rel).
func commandKind(command string, interp Interpreters) (path, rel string, err error) {
	switch {
	case command == "":
		return "", "", ErrNoCommand
	case filepath.IsAbs(command) || strings.HasPrefix(command, "/"):
		return "", "", fmt.Errorf("command %q: %w", command, ErrAbsoluteCommand)
	case strings.ContainsRune(command, '/'):
		clean := filepath.Clean(filepath.FromSlash(command))
		if !filepath.IsLocal(clean) {
			return "", "", fmt.Errorf("command %q: %w", command, ErrCommandEscapes)
		}
		return "", clean, nil
	}
	if p, ok := interp[command]; ok {
		return p, "", nil
	}
	return "", "", fmt.Errorf("command %q: %w (allowed: %s); start the host with --runtime %s=/absolute/path to allow it, or name a file in the version folder as ./%s",
		command, ErrUnknownInterpreter, interp.names(), command, command)
}

// ResolveCommand returns the program to exec for command: the operator's
// path for an allowed interpreter, or the file inside dir (which must be an
// executable regular file, not a symbolic link). dir is the private copy the
// process will run from, so what is resolved is what was verified.
func ResolveCommand(command string, interp Interpreters, dir string) (string, error) {
	path, rel, err := commandKind(command, interp)
	if err != nil {
		return "", err
	}
	if path != "" {
		if err := executableFile(path, os.Stat); err != nil {
			return "", fmt.Errorf("command %q: the allowed interpreter %s: %w", command, path, err)
		}
		return path, nil
	}
	full := filepath.Join(dir, rel)
	if err := executableFile(full, os.Lstat); err != nil {
		return "", fmt.Errorf("command %q: %w: %w", command, ErrCommandNotFound, err)
	}
	return full, nil
}

func executableFile(path string, stat func(string) (fs.FileInfo, error)) error {
	fi, err := stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
