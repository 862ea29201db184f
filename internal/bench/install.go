package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// skillBinary is the benchskill build, with its checksum computed once.
type skillBinary struct {
	path, sum string
}

func newSkillBinary(path string) (*skillBinary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return &skillBinary{path: path, sum: hex.EncodeToString(h.Sum(nil))}, nil
}

// manifest returns manifest.json for skill@version served by the binary.
func (b *skillBinary) manifest(skill, version string) []byte {
	m := map[string]any{
		"manifest_version": 1, "name": skill, "version": version,
		"description": "Benchmark skill " + skill + ": echo and a 64 KiB blob.",
		"entrypoint":  "skill", "sha256": b.sum, "tags": []string{"bench"},
		"tools":  []string{"blob", "echo"},
		"env":    map[string]string{"BENCHSKILL_NAME": skill, "BENCHSKILL_VERSION": version},
		"limits": benchLimits,
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	return out
}

// stage writes a complete version folder under root/.staging and returns
// it; rename it to root/<skill>/<version> to install it atomically, as
// scripts/install-skill.sh does.
func (b *skillBinary) stage(root, skill, version string) (string, error) {
	staging := filepath.Join(root, ".staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(staging, skill+"-"+version+"-")
	if err != nil {
		return "", err
	}
	if err := copyFile(b.path, filepath.Join(dir, "skill")); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b.manifest(skill, version), 0o644); err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// install stages and renames skill@version into root.
func (b *skillBinary) install(root, skill, version string) error {
	dir, err := b.stage(root, skill, version)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, skill), 0o755); err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(root, skill, version)); err != nil {
		return fmt.Errorf("install %s@%s: %w", skill, version, err)
	}
	return nil
}

// variant writes into dir a copy of the binary with n's bytes appended
// after the ELF image (the kernel and the Go runtime ignore them), so it has
// its own content and checksum: a tree of variants is one of distinct
// binaries, as a real tree is, and nothing is shared between their copies.
func (b *skillBinary) variant(dir string, n int) (*skillBinary, error) {
	dst := filepath.Join(dir, fmt.Sprintf("benchskill-%d", n))
	if err := copyFile(b.path, dst); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "skillbench variant %d\n", n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return newSkillBinary(dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
