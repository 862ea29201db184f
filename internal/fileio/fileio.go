package fileio

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// MaxSecretBytes caps a secret file: a token or a key is one short line,
// and a path named by mistake (a log, a device) must not be read whole.
const MaxSecretBytes = 64 << 10

// ReadSecret reads a secret file: its first line, trimmed. what names the
// file in errors ("token file", "--embed-key-file"). It refuses what is not
// a regular file, a file group or others may read or write (the secret
// guards the daemon or a paid account), one over MaxSecretBytes and an
// empty secret. The checks are made on the open file, not on the path.
func ReadSecret(path, what string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s %s is not a regular file (mode %v)", what, path, fi.Mode())
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s %s is readable by others (mode %v); chmod 600 it", what, path, fi.Mode().Perm())
	case fi.Size() > MaxSecretBytes:
		return "", fmt.Errorf("%s %s is %d bytes, over the %d a secret may be", what, path, fi.Size(), MaxSecretBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > MaxSecretBytes { // it grew since the stat
		return "", fmt.Errorf("%s %s is over the %d bytes a secret may be", what, path, MaxSecretBytes)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	secret := strings.TrimSpace(line)
	if secret == "" {
		return "", fmt.Errorf("%s %s is empty", what, path)
	}
	return secret, nil
}

// WriteAtomic replaces path with data, created with perm (less the umask)
// or keeping the mode of the file it replaces. The temp file is made in
// path's own folder, so the rename never crosses file systems, and the
// folder is synced after the rename, so the new file outlives a power cut
// (an operator's pin must still hold after one).
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := renameio.WriteFile(path, data, perm, renameio.WithTempDir(dir)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems cannot sync a folder
		d.Close()
	}
	return nil
}
