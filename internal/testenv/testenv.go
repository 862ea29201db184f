package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/skillhost/skillhost/sdk/proctree"
)

// ModuleRoot returns the repository root (the folder of the root go.mod).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Build compiles the main package pkg (relative to the module root, e.g.
// "./internal/testskill") into dir and returns the binary's path.
func Build(dir, pkg string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = ModuleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Version describes a version folder to install.
type Version struct {
	Skill, Version string
	Binary         string            // file to copy in as the entrypoint
	Env            map[string]string // manifest env
	Tools          []string
	Limits         map[string]any
	Uses           []string // manifest uses: the tools the skill may call through the host
	// SHA256 overrides the checksum written (to fake a copy in progress).
	SHA256 string
}

// Manifest returns the manifest.json bytes for v, given the binary's sha256.
func (v Version) Manifest(sum string) []byte {
	m := map[string]any{
		"manifest_version": 1, "name": v.Skill, "version": v.Version,
		"description": "Test skill " + v.Skill + ".", "entrypoint": "skill", "sha256": sum,
		"tags": []string{"test"},
	}
	env := map[string]string{"TESTSKILL_NAME": v.Skill, "TESTSKILL_VERSION": v.Version}
	for k, val := range v.Env {
		env[k] = val
	}
	m["env"] = env
	if v.Tools != nil {
		m["tools"] = v.Tools
	}
	if v.Limits != nil {
		m["limits"] = v.Limits
	}
	if v.Uses != nil {
		m["uses"] = v.Uses
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return b
}

// Install writes v under root/<skill>/<version>/ atomically: staged in
// root/.staging, then renamed into place, as scripts/install-skill.sh does.
func Install(root string, v Version) (string, error) {
	staging := filepath.Join(root, ".staging")
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(staging, "v-")
	if err != nil {
		return "", err
	}
	sum, err := copyFile(v.Binary, filepath.Join(stage, "skill"))
	if err != nil {
		return "", err
	}
	if v.SHA256 != "" {
		sum = v.SHA256
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), v.Manifest(sum), 0o644); err != nil {
		return "", err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return "", err
	}
	skillDir := filepath.Join(root, v.Skill)
	if err := os.MkdirAll(skillDir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(skillDir, v.Version)
	if err := os.Rename(stage, dst); err != nil {
		return "", err
	}
	return dst, nil
}

func copyFile(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), out.Close()
}

// SHA256File returns the hex sha256 of a file.
func SHA256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SkillProcesses is Descendants of a host without its reaper (the watchdog
// that kills the skills if the host dies; see loader.Config.Reaper), so
// what is left is the skills and the processes they started.
func SkillProcesses(host int) []int {
	var out []int
	for _, p := range Descendants(host) {
		if !IsReaper(p) {
			out = append(out, p)
		}
	}
	return out
}

// IsReaper reports whether pid is a host's reaper, by its command line.
func IsReaper(pid int) bool {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.Contains(string(b), "__skill-reaper")
}

// Descendants returns the pids of every live process descended from pid,
// read from /proc (Linux only; empty elsewhere).
func Descendants(pid int) []int {
	children := proctree.Children(proctree.List())
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// Alive reports whether a process exists and is not a zombie.
func Alive(pid int) bool {
	p, ok := proctree.Stat(pid)
	return ok && !p.Zombie()
}

// WaitFor polls cond every 10 ms until it holds or timeout passes.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}
