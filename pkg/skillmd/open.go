package skillmd

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// Open opens a file of the skill for reading. rel is a path relative to the skill folder with
// "/" separators ("references/forms.md"), and it must name a file the walk listed as served:
// a path that is not plain (absolute, with "..", ".", empty elements, a backslash or a NUL),
// names a hidden file, or names anything else is refused before a file is touched.
//
// The file is opened through an os.Root on the skill folder, which resolves every path
// element itself with O_NOFOLLOW and refuses any step that leaves the folder, so no symlink
// swapped in after Load can lead out of it. The opened file is then checked with fstat: it
// must be a regular file, the same file (device and inode) the walk listed, and no larger than
// MaxFileBytes; otherwise the error wraps ErrChanged and a reload is due. The file is opened
// non-blocking where the platform has it, so a FIFO put in a file's place cannot hang a read.
//
// Open works whatever the skill's Status; a caller serving models should serve only valid
// skills. The caller closes the file.
func (s Skill) Open(rel string) (*os.File, error) {
	f, err := s.lookup(rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("skill %s: open %s: %w", s.Name, rel, err)
	}
	defer root.Close() // the opened file does not need the root
	file, err := openChecked(root, f.Path, f.id, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("skill %s: open %s: %w", s.Name, rel, err)
	}
	return file, nil
}

// ReadFile reads a file of the skill whole, with Open's checks; the read is capped at
// MaxFileBytes even if the file grows while it is read.
func (s Skill) ReadFile(rel string) ([]byte, error) {
	file, err := s.Open(rel)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("skill %s: read %s: %w", s.Name, rel, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("skill %s: read %s: grew past %d bytes: %w", s.Name, rel, MaxFileBytes, ErrChanged)
	}
	return data, nil
}

// File returns the listed file at rel, if there is one.
func (s Skill) File(rel string) (File, bool) {
	i := sort.Search(len(s.Files), func(i int) bool { return s.Files[i].Path >= rel })
	if i < len(s.Files) && s.Files[i].Path == rel {
		return s.Files[i], true
	}
	return File{}, false
}

func (s Skill) lookup(rel string) (File, error) {
	if !plainPath(rel) {
		return File{}, fmt.Errorf("skill %s: open %q: %w", s.Name, rel, ErrBadPath)
	}
	f, ok := s.File(rel)
	if !ok || !f.Served {
		return File{}, fmt.Errorf("skill %s: open %s: %w", s.Name, rel, ErrNotServed)
	}
	return f, nil
}

// plainPath accepts a relative "/"-separated path with no ".", ".." or empty element, no
// backslash or NUL, and no hidden element: the only shape a served file's path has.
func plainPath(rel string) bool {
	if !fs.ValidPath(rel) || rel == "." || strings.ContainsAny(rel, "\\\x00") {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if strings.HasPrefix(elem, ".") {
			return false
		}
	}
	return true
}

// openChecked opens rel through root and checks, on the open file, that it is a regular file
// no larger than limit and, when want is known, the same file as want.
func openChecked(root *os.Root, rel string, want fileID, limit int64) (*os.File, error) {
	file, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	var why string
	switch got := fileIDOf(fi); {
	case !fi.Mode().IsRegular():
		why = "is no longer a regular file"
	case want != (fileID{}) && got != want:
		why = "was replaced"
	case fi.Size() > limit:
		why = fmt.Sprintf("grew to %d bytes, over the %d-byte limit", fi.Size(), limit)
	}
	if why != "" {
		file.Close()
		return nil, fmt.Errorf("%s: %w", why, ErrChanged)
	}
	return file, nil
}

// readCapped reads rel whole through openChecked.
func readCapped(root *os.Root, rel string, want fileID, limit int64) ([]byte, error) {
	file, err := openChecked(root, rel, want, limit)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("grew past %d bytes: %w", limit, ErrChanged)
	}
	return data, nil
}
