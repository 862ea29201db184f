package fileio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  s3cret-value \nsecond line\n", 0o600)
	if got, err := ReadSecret(good, "key file"); err != nil || got != "s3cret-value" {
		t.Errorf("ReadSecret = %q, %v", got, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSecret(link, "key file"); err != nil || got != "s3cret-value" {
		t.Errorf("through a symlink (as Kubernetes mounts secrets): %q, %v", got, err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("open", "x\n", 0o644), "is readable by others (mode -rw-r--r--); chmod 600 it"},
		{write("group", "x\n", 0o620), "is readable by others"},
		{write("empty", " \n", 0o600), "is empty"},
		{write("big", strings.Repeat("x", MaxSecretBytes+1), 0o600), "over the 65536 a secret may be"},
		{dir, "is not a regular file"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		_, err := ReadSecret(tc.path, "token file")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "token file") {
			t.Errorf("ReadSecret(%s) = %v, want an error with %q", filepath.Base(tc.path), err, tc.want)
		}
	}
}

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteAtomic(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || string(b) != "two" || fi.Mode().Perm() != 0o640 {
		t.Errorf("after a replace: %q %v, mode %v (want the old file's 0640 kept)", b, err, fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left beside it: %v", entries)
	}
	if err := WriteAtomic(filepath.Join(dir, "no", "such", "dir"), nil, 0o600); err == nil || !strings.Contains(err.Error(), "write ") {
		t.Errorf("into a missing folder: %v", err)
	}
}
