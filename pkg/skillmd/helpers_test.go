package skillmd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// write creates dir/rel with content, making the folders on the way.
func write(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// skillMD is a valid SKILL.md for the skill called name.
func skillMD(name string, extra ...string) string {
	return md("# "+name+"\n\nFollow these steps.\n", append([]string{"name: " + name, "description: Does " + name + " things."}, extra...)...)
}

// paths lists the paths of a skill's files.
func paths(s Skill) []string {
	out := make([]string, len(s.Files))
	for i, f := range s.Files {
		out[i] = f.Path
	}
	return out
}

func errorStrings(s Skill) []string   { return problemStrings(s.Problems.Errors()) }
func warningStrings(s Skill) []string { return problemStrings(s.Problems.Warnings()) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
