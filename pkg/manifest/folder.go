package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// DigestPrefix starts a folder digest as a manifest records it ("sha256:<64 hex>"): the
// algorithm is named, as in an OCI digest, so that a folder digest is never mistaken for the
// sha256 of one file.
const DigestPrefix = "sha256:"

// Caps on a version folder that the folder digest covers, far above a real MCP server with
// its node_modules (@modelcontextprotocol/server-everything: about 3,900 files, 32 MB), so
// that a runaway folder fails with a clear error rather than filling the disk with copies.
const (
	MaxFolderFiles = 100_000
	MaxFolderBytes = 2 << 30
)

// Errors of the folder digest, for errors.Is.
var (
	// ErrUnsupportedFile: the version folder holds something the digest cannot vouch for: a
	// symbolic link, a device, a socket, or a name with a newline or backslash.
	ErrUnsupportedFile = errors.New("unsupported file in the version folder")
	// ErrFolderTooLarge: the version folder holds more files or bytes than the caps allow.
	ErrFolderTooLarge = errors.New("the version folder is too large")
)

// FolderDigest returns the hex digest of a version folder: the sha256 of the lines
// "<sha256 of the file>  ./<path>\n" for every regular file but the top-level manifest.json,
// sorted by path bytewise. It is what
//
//	cd DIR && find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
//
// prints, so an install script needs no host binary to write a manifest. A symbolic link,
// device or socket anywhere, or a name sha256sum would escape (a newline or backslash), is
// refused with ErrUnsupportedFile: the digest could not vouch for what it points to.
func FolderDigest(dir string) (string, error) {
	return HashFolder(context.Background(), dir, nil)
}

// FileSink receives a file's bytes while HashFolder hashes them: it returns where they go
// (a runtime's private copy, say), given the file's slash-separated path in the folder.
type FileSink func(rel string, fi fs.FileInfo) (io.WriteCloser, error)

// HashFolder is FolderDigest that also writes each file's bytes to sink (when not nil), so
// that what is hashed is exactly what was written, and that stops between files once ctx is
// done: a big folder takes seconds, which a stopping host should not wait for.
func HashFolder(ctx context.Context, dir string, sink FileSink) (string, error) {
	return walkFolder(ctx, dir, func(rel string, fi fs.FileInfo) (string, error) {
		return readFile(dir, rel, sink)
	})
}

// folderDigest is the scan's FolderDigest: a file the cache knows unchanged is not read
// again, so a rescan of a node_modules costs a stat per file.
func (c *HashCache) folderDigest(dir string) (string, error) {
	return walkFolder(context.Background(), dir, func(rel string, fi fs.FileInfo) (string, error) {
		return c.hashFile(filepath.Join(dir, filepath.FromSlash(rel)))
	})
}

// walkFolder lists dir's files, checks them against the rules and caps, then asks sum for
// each file's hex sha256 in path order and returns the folder digest.
func walkFolder(ctx context.Context, dir string, sum func(rel string, fi fs.FileInfo) (string, error)) (string, error) {
	type file struct {
		rel string
		fi  fs.FileInfo
	}
	var files []file
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.ContainsAny(rel, "\n\\") {
			return fmt.Errorf("%w: %q: the name holds a newline or backslash", ErrUnsupportedFile, rel)
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case !t.IsRegular():
			return fmt.Errorf("%w: %s is a %s; only regular files and folders are allowed (npm install --no-bin-links)", ErrUnsupportedFile, rel, typeName(t))
		case rel == FileName:
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if total += fi.Size(); total > MaxFolderBytes {
			return fmt.Errorf("%w: over %d bytes", ErrFolderTooLarge, int64(MaxFolderBytes))
		}
		if files = append(files, file{rel, fi}); len(files) > MaxFolderFiles {
			return fmt.Errorf("%w: over %d files", ErrFolderTooLarge, MaxFolderFiles)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	// sha256sum sorts "./a/b" against "./a.b" by the bytes of the whole path.
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.rel, b.rel) })
	h := sha256.New()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("folder %s: %w", dir, err)
		}
		s, err := sum(f.rel, f.fi)
		if err != nil {
			return "", fmt.Errorf("folder %s: %s: %w", dir, f.rel, err)
		}
		fmt.Fprintf(h, "%s  ./%s\n", s, f.rel)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readFile hashes one file of the folder, never following a link, and copies its bytes to
// the sink's writer when there is a sink.
func readFile(dir, rel string, to FileSink) (string, error) {
	// O_NOFOLLOW: a file swapped for a link after the walk is refused, not followed out of
	// the folder.
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(rel)), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: no longer a regular file", ErrUnsupportedFile)
	}
	h := sha256.New()
	if to == nil {
		_, err = io.Copy(h, f)
		return hex.EncodeToString(h.Sum(nil)), err
	}
	out, err := to(rel, fi)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(io.MultiWriter(out, h), f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}
