package skillmd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// secret is what lives outside every skill folder in these tests; no read may return it.
const secret = "host secret: do not serve"

func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, "outside.txt", secret)
	dir := filepath.Join(root, "skills", "pdf")
	write(t, dir, "SKILL.md", skillMD("pdf"))
	write(t, dir, "references/real.md", "inside")

	symlink(t, "real.md", filepath.Join(dir, "references/alias.md"))              // inside: served
	symlink(t, filepath.Join(root, "outside.txt"), filepath.Join(dir, "abs.txt")) // absolute, out
	symlink(t, "../../../outside.txt", filepath.Join(dir, "references/up.txt"))   // relative, out
	symlink(t, "..", filepath.Join(dir, "sub/up"))                                // a folder
	symlink(t, "sub/up/../../outside.txt", filepath.Join(dir, "chain.txt"))       // looks inside, is not
	symlink(t, "nowhere.md", filepath.Join(dir, "dangling.md"))                   // to nothing
	symlink(t, "references", filepath.Join(dir, "refs"))                          // a folder inside
	write(t, dir, ".env", "API_KEY="+secret)                                      // hidden
	write(t, dir, ".git/config", secret)                                          // hidden folder

	s := Load(dir, Unversioned)
	if s.Status != StatusValid {
		t.Fatalf("status %s: %v", s.Status, s.Problems)
	}
	if got, want := paths(s), []string{"SKILL.md", "references/alias.md", "references/real.md"}; !slices.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
	wantWarnings := []string{
		`abs.txt: warning: is a symlink to "` + filepath.Join(root, "outside.txt") + `", outside the skill folder; not served`,
		`chain.txt: warning: is a symlink to "sub/up/../../outside.txt" that does not resolve inside the skill folder; not served`,
		`dangling.md: warning: is a symlink to "nowhere.md" that does not resolve inside the skill folder; not served`,
		`references/up.txt: warning: is a symlink to "../../../outside.txt", outside the skill folder; not served`,
		`refs: warning: is a symlink to a folder; symlinked folders are not followed, so its files are not served`,
		`sub/up: warning: is a symlink to a folder; symlinked folders are not followed, so its files are not served`,
	}
	if got := warningStrings(s); !slices.Equal(got, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", got, wantWarnings)
	}
	if data, err := s.ReadFile("references/alias.md"); err != nil || string(data) != "inside" {
		t.Errorf("alias: %q, %v", data, err)
	}
	for _, rel := range []string{"abs.txt", "chain.txt", "references/up.txt", "refs/real.md", "sub/up/outside.txt"} {
		data, err := s.ReadFile(rel)
		if !errors.Is(err, ErrNotServed) || strings.Contains(string(data), secret) {
			t.Errorf("ReadFile(%s) = %q, %v; want ErrNotServed", rel, data, err)
		}
	}
}

func TestSymlinkedSkillMD(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pdf")
	write(t, dir, "real.md", skillMD("pdf"))
	symlink(t, "real.md", filepath.Join(dir, "SKILL.md"))
	s := Load(dir, Unversioned)
	if got := errorStrings(s); s.Status != StatusInvalid || !slices.Equal(got, []string{"SKILL.md: is a symlink; it must be a regular file in the skill folder"}) {
		t.Errorf("status %s, errors %q", s.Status, got)
	}
}

func TestOpenRefusesPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pdf")
	write(t, dir, "SKILL.md", skillMD("pdf"))
	write(t, dir, "references/a.md", "a")
	write(t, dir, ".env", secret)
	s := Load(dir, Unversioned)

	for _, rel := range []string{"", ".", "/etc/passwd", dir + "/SKILL.md", "../pdf/SKILL.md", "references/../SKILL.md",
		"./SKILL.md", "references//a.md", "references/", `references\a.md`, "SKILL.md\x00", ".env", "references/.hidden"} {
		if _, err := s.Open(rel); !errors.Is(err, ErrBadPath) {
			t.Errorf("Open(%q) = %v, want ErrBadPath", rel, err)
		}
	}
	for _, rel := range []string{"missing.md", "references", "REFERENCES/a.md"} {
		if _, err := s.Open(rel); !errors.Is(err, ErrNotServed) {
			t.Errorf("Open(%q) = %v, want ErrNotServed", rel, err)
		}
	}
	f, err := s.Open("references/a.md")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestOpenAfterTheFolderChanged(t *testing.T) {
	root := t.TempDir()
	write(t, root, "outside.txt", secret)
	dir := filepath.Join(root, "pdf")
	write(t, dir, "SKILL.md", skillMD("pdf"))
	for _, name := range []string{"renamed", "linked", "grown", "gone", "fifo", "parent"} {
		write(t, dir, "references/"+name+".md", "checked")
	}
	write(t, dir, "deep/inner/x.md", "checked")
	s := Load(dir, Unversioned)
	if s.Status != StatusValid {
		t.Fatal(s.Problems)
	}

	// After Load, each file is swapped for something else, the way an attacker or a careless
	// copy would: none of them may serve bytes the walk did not check.
	ref := func(name string) string { return filepath.Join(dir, "references", name+".md") }
	write(t, dir, "references/new.md", "unchecked")
	must(t, os.Rename(filepath.Join(dir, "references/new.md"), ref("renamed")))
	must(t, os.Remove(ref("linked")))
	symlink(t, filepath.Join(root, "outside.txt"), ref("linked"))
	must(t, os.WriteFile(ref("grown"), make([]byte, MaxFileBytes+1), 0o644))
	must(t, os.Remove(ref("gone")))
	must(t, os.RemoveAll(filepath.Join(dir, "deep/inner")))
	symlink(t, root, filepath.Join(dir, "deep/inner"))

	cases := map[string]error{
		"references/renamed.md": ErrChanged,
		"references/linked.md":  nil, // os.Root refuses the link out; any error will do
		"references/grown.md":   ErrChanged,
		"references/gone.md":    fs.ErrNotExist,
		"deep/inner/x.md":       nil,
	}
	if haveFIFOs {
		must(t, os.Remove(ref("fifo")))
		mkfifo(t, ref("fifo"))
		cases["references/fifo.md"] = ErrChanged // opened non-blocking, so this returns
	}
	for rel, want := range cases {
		data, err := s.ReadFile(rel)
		switch {
		case err == nil:
			t.Errorf("ReadFile(%s) = %q, want an error", rel, data)
		case want != nil && !errors.Is(err, want):
			t.Errorf("ReadFile(%s) = %v, want %v", rel, err, want)
		}
	}
	// A file rewritten in place is still the same file; the watcher reloads it, and until then
	// it is served as it is now, capped.
	write(t, dir, "references/parent.md", "edited")
	if data, err := s.ReadFile("references/parent.md"); err != nil || string(data) != "edited" {
		t.Errorf("in-place edit: %q, %v", data, err)
	}
}

func TestEscapes(t *testing.T) {
	tests := []struct {
		link, target string
		want         bool
	}{
		{"a", "b", false},
		{"a", "../b", true},
		{"x/a", "../b", false},
		{"x/a", "../../b", true},
		{"x/a", "./y/../../b", false},
		{"x/a", "y/../../../b", true},
		{"a", "/etc/passwd", true},
	}
	for _, tt := range tests {
		if got := escapes(tt.link, tt.target); got != tt.want {
			t.Errorf("escapes(%q, %q) = %v", tt.link, tt.target, got)
		}
	}
}

func TestCaps(t *testing.T) {
	t.Run("file over MaxFileBytes is listed, not served", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fonts")
		write(t, dir, "SKILL.md", skillMD("fonts"))
		sparse(t, filepath.Join(dir, "assets/big.ttf"), MaxFileBytes+1)
		s := Load(dir, Unversioned)
		f, ok := s.File("assets/big.ttf")
		if s.Status != StatusValid || !ok || f.Served || f.Size != MaxFileBytes+1 || f.SHA256 != "" {
			t.Fatalf("status %s, file %+v (%v)", s.Status, f, ok)
		}
		if got := warningStrings(s); !slices.Equal(got, []string{"assets/big.ttf: warning: is 1048577 bytes, over the 1048576-byte limit of a served file; listed but not served"}) {
			t.Errorf("warnings = %q", got)
		}
		if _, err := s.ReadFile("assets/big.ttf"); !errors.Is(err, ErrNotServed) {
			t.Errorf("ReadFile = %v", err)
		}
	})
	t.Run("too many files", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "many")
		write(t, dir, "SKILL.md", skillMD("many"))
		// SKILL.md, assets/, 10 folders and 988 files make 1000 entries, the most allowed.
		for i := range MaxFiles - 12 {
			write(t, dir, filepath.Join("assets", strings.Repeat("x", 1+i/100), "f"+itoa(i)), "")
		}
		if s := Load(dir, Unversioned); s.Status != StatusValid {
			t.Fatalf("at the cap: %s %v", s.Status, s.Problems.Errors())
		}
		write(t, dir, "assets/one-more", "")
		s := Load(dir, Unversioned)
		if got := errorStrings(s); s.Status != StatusInvalid || !slices.Equal(got, []string{
			"folder: holds more than 1000 files and folders; an instruction skill this large is refused (hidden ones are not counted)"}) {
			t.Errorf("status %s, errors %q", s.Status, got)
		}
	})
	t.Run("too many bytes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "heavy")
		write(t, dir, "SKILL.md", skillMD("heavy"))
		for i := range MaxFolderBytes/MaxFileBytes + 1 {
			sparse(t, filepath.Join(dir, "assets", "f"+itoa(i)), MaxFileBytes)
		}
		s := Load(dir, Unversioned)
		if got := errorStrings(s); s.Status != StatusInvalid || !slices.Equal(got, []string{
			"folder: its served files add up to more than 67108864 bytes; an instruction skill this large is refused"}) {
			t.Errorf("status %s, errors %q", s.Status, got)
		}
	})
	t.Run("too deep", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "deep")
		write(t, dir, "SKILL.md", skillMD("deep"))
		write(t, dir, "a/b/c/d/e/f/g/h/ok.md", "")
		write(t, dir, "a/b/c/d/e/f/g/h/i/no.md", "")
		s := Load(dir, Unversioned)
		if !slices.Contains(paths(s), "a/b/c/d/e/f/g/h/ok.md") || slices.Contains(paths(s), "a/b/c/d/e/f/g/h/i/no.md") {
			t.Errorf("files = %q", paths(s))
		}
		if got := warningStrings(s); !slices.Equal(got, []string{"a/b/c/d/e/f/g/h/i: warning: is more than 8 folders deep; its files are not listed or served"}) {
			t.Errorf("warnings = %q", got)
		}
	})
	t.Run("SKILL.md over the cap is not read", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "huge")
		sparse(t, filepath.Join(dir, "SKILL.md"), MaxSkillMDBytes+1)
		s := Load(dir, Unversioned)
		if got := errorStrings(s); s.Status != StatusInvalid || !slices.Equal(got, []string{"SKILL.md: is 262145 bytes, over the 262144-byte limit; it was not read"}) {
			t.Errorf("status %s, errors %q", s.Status, got)
		}
	})
	t.Run("special files are not served", func(t *testing.T) {
		if !haveFIFOs {
			t.Skip("no FIFOs here")
		}
		dir := filepath.Join(t.TempDir(), "odd")
		write(t, dir, "SKILL.md", skillMD("odd"))
		mkfifo(t, filepath.Join(dir, "pipe"))
		s := Load(dir, Unversioned) // would hang if the walk opened the FIFO
		if got := warningStrings(s); s.Status != StatusValid || !slices.Equal(got, []string{"pipe: warning: is not a regular file (p---------); not served"}) {
			t.Errorf("status %s, warnings %q", s.Status, got)
		}
	})
}

func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	f, err := os.Create(p)
	must(t, err)
	must(t, f.Truncate(size))
	must(t, f.Close())
}

func itoa(i int) string { return strconv.Itoa(i) }
