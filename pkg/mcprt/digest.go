package mcprt

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// ManifestFile is left out of the folder digest: it holds the digest.
const ManifestFile = manifest.FileName

// Caps on a version folder: manifest.MaxFolderFiles and MaxFolderBytes.
const (
	MaxFolderFiles = manifest.MaxFolderFiles
	MaxFolderBytes = manifest.MaxFolderBytes
)

// FolderDigest returns the hex digest of a version folder; it is
// manifest.FolderDigest, which the scan checks the manifest's digest with.
func FolderDigest(dir string) (string, error) { return manifest.FolderDigest(dir) }

// copyFolder copies src into dst (which must not exist) and returns the
// digest of what it wrote: each file is hashed from the very bytes written to
// the copy, and the copy sits in a folder only the host can write, so the
// digest is the copy's and nothing can change it between check and exec.
func copyFolder(ctx context.Context, src, dst string) (string, error) {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return "", err
	}
	made := map[string]bool{dst: true} // folders made: a node_modules has thousands of files in hundreds of them
	return manifest.HashFolder(ctx, src, func(rel string, fi fs.FileInfo) (io.WriteCloser, error) {
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
