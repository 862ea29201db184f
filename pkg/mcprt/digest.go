package mcprt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ManifestFile is left out of the folder digest: it holds the digest.
const ManifestFile = "manifest.json"

// Caps on a version folder, far above a real server with its node_modules
// (@modelcontextprotocol/server-everything: about 3,900 files, 32 MB), so
// that a runaway folder fails with a clear error rather than filling the disk
// with private copies.
const (
	MaxFolderFiles = 100_000
	MaxFolderBytes = 2 << 30
)

// FolderDigest returns the digest of a version folder: the sha256 of the
// lines "<sha256 of the file>  ./<path>\n" for every regular file but the
// top-level manifest.json, sorted by path bytewise. It is what
//
//	cd DIR && find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum
//
// prints, so an install script needs no host binary to write a manifest. A
// symbolic link, device or socket anywhere, or a name sha256sum would escape
// (a newline or backslash), is refused with ErrUnsupportedFile: the digest
// could not vouch for what it points to.
func FolderDigest(dir string) (string, error) {
	return walkFolder(context.Background(), dir, nil)
}

// copyFolder copies src into dst (which must not exist) and returns the
// digest of what it wrote: each file is hashed from the very bytes written to
// the copy, and the copy sits in a folder only the host can write, so the
// digest is the copy's and nothing can change it between check and exec.
//
// It stops between files once ctx is done: a big folder takes seconds,
// which a stopping host should not wait for.
func copyFolder(ctx context.Context, src, dst string) (string, error) {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return "", err
	}
	made := map[string]bool{dst: true} // folders made: a node_modules has thousands of files in hundreds of them
	return walkFolder(ctx, src, func(rel string, fi fs.FileInfo) (io.WriteCloser, error) {
		to := filepath.Join(dst, filepath.FromSlash(rel))
		if dir := filepath.Dir(to); !made[dir] {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			made[dir] = true
		}
		perm := fs.FileMode(0o400)
		if fi.Mode().Perm()&0o100 != 0 {
			perm = 0o500
		}
		return os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	})
}

// sink returns where a file's bytes go besides the hash; nil: nowhere.
type sink func(rel string, fi fs.FileInfo) (io.WriteCloser, error)

// walkFolder lists dir's files, then reads each (never following a link)
// into the hash, and into the sink's writer when there is a sink.
func walkFolder(ctx context.Context, dir string, to sink) (string, error) {
	var files []string
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
		case rel == ManifestFile:
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if total += fi.Size(); total > MaxFolderBytes {
			return fmt.Errorf("%w: over %d bytes", ErrFolderTooLarge, int64(MaxFolderBytes))
		}
		if files = append(files, "./"+rel); len(files) > MaxFolderFiles {
			return fmt.Errorf("%w: over %d files", ErrFolderTooLarge, MaxFolderFiles)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("folder %s: %w", dir, err)
	}
	slices.Sort(files)
	sum, fileSum := sha256.New(), sha256.New()
	for _, name := range files {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("folder %s: %w", dir, err)
		}
		fileSum.Reset()
		if err := readFile(dir, name[2:], fileSum, to); err != nil {
			return "", fmt.Errorf("folder %s: %s: %w", dir, name[2:], err)
		}
		fmt.Fprintf(sum, "%x  %s\n", fileSum.Sum(nil), name)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

func readFile(dir, rel string, h io.Writer, to sink) error {
	// O_NOFOLLOW: a file swapped for a link after the walk is refused, not
	// followed out of the folder.
	f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(rel)), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: no longer a regular file", ErrUnsupportedFile)
	}
	if to == nil {
		_, err = io.Copy(h, f)
		return err
	}
	out, err := to(rel, fi)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.MultiWriter(out, h), f)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
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
