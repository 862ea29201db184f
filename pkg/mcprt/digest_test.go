package mcprt

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

var sampleTree = map[string]string{
	"manifest.json":                    `{"left out": true}`,
	"server.js":                        "console.error('hi')\n",
	"bin/run":                          "#!/bin/sh\n",
	"node_modules/a-b/index.js":        "module.exports = 1\n",
	"node_modules/a/index.js":          "module.exports = 2\n",
	"node_modules/a/sub/manifest.json": "{}",
	"empty":                            "",
}

// The digest is what the documented shell pipeline prints, so install
// scripts can write manifests without a host binary.
func TestFolderDigestMatchesShell(t *testing.T) {
	for _, tool := range []string{"sh", "find", "sort", "xargs", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	got, err := FolderDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `find . -type f ! -path ./manifest.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Errorf("FolderDigest = %s, the shell pipeline says %s", got, want)
	}
	// The manifest is left out; anything else changes the digest.
	writeTree(t, dir, map[string]string{"manifest.json": "{}"})
	if again, _ := FolderDigest(dir); again != got {
		t.Error("changing manifest.json changed the digest")
	}
	writeTree(t, dir, map[string]string{"node_modules/a/index.js": "module.exports = 3\n"})
	if again, _ := FolderDigest(dir); again == got {
		t.Error("changing a file left the digest alone")
	}
}

func TestFolderDigestRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, sampleTree)
	if err := os.Symlink("../../etc/passwd", filepath.Join(dir, "node_modules", "evil")); err != nil {
		t.Fatal(err)
	}
	_, err := FolderDigest(dir)
	if !errors.Is(err, ErrUnsupportedFile) || !strings.Contains(err.Error(), "node_modules/evil is a symbolic link") {
		t.Errorf("want ErrUnsupportedFile naming the link, got %v", err)
	}
}

func TestCopyFolder(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, sampleTree)
	want, err := FolderDigest(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "app")
	got, err := copyFolder(context.Background(), src, dst)
	if err != nil || got != want {
		t.Fatalf("copyFolder = %s, %v; want %s", got, err, want)
	}
	if again, _ := FolderDigest(dst); again != want {
		t.Errorf("the copy hashes to %s, not %s", again, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := copyFolder(ctx, src, filepath.Join(t.TempDir(), "app")); !errors.Is(err, context.Canceled) {
		t.Errorf("a copy under a cancelled context: want context.Canceled, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "manifest.json")); !os.IsNotExist(err) {
		t.Error("the manifest was copied; the server has no use for it")
	}
	fi, err := os.Stat(filepath.Join(dst, "bin", "run"))
	if err != nil || fi.Mode().Perm() != 0o500 {
		t.Errorf("bin/run in the copy: %v, %v; want read-only and executable", fi.Mode(), err)
	}
	fi, err = os.Stat(filepath.Join(dst, "server.js"))
	if err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("server.js in the copy: %v, %v; want read-only", fi.Mode(), err)
	}
}
