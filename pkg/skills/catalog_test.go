package skills_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func doc(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nUse `calc.evaluate` for sums.\n"
}

// publish scans root and publishes it, failing the test on a scan error.
func publish(t *testing.T, c *skills.Catalog, root string) bool {
	t.Helper()
	found, err := skillmd.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	return c.Publish(found)
}

func TestPublishFollowsTheHotReloadRules(t *testing.T) {
	root := t.TempDir()
	c := skills.New()
	writeFile(t, filepath.Join(root, "tax-help", "SKILL.md"), doc("tax-help", "Work out income tax for a salary."))
	writeFile(t, filepath.Join(root, "trip", "1.0.0", "SKILL.md"), doc("trip", "Plan a business trip and its lodging budget."))
	changed := c.Changed()
	if !publish(t, c, root) {
		t.Fatal("first publish reported no change")
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed was not closed by a publish that changed the catalog")
	}
	snap := c.Snapshot()
	if snap.Len() != 2 {
		t.Fatalf("serving %d skills, want 2", snap.Len())
	}
	if publish(t, c, root) {
		t.Error("a rescan of an unchanged tree reported a change")
	}

	// A new version swaps in.
	writeFile(t, filepath.Join(root, "trip", "1.1.0", "SKILL.md"), doc("trip", "Plan a business trip, its lodging budget and its per diem."))
	publish(t, c, root)
	if e, _ := c.Snapshot().Get("trip"); e.Serving.Version != "1.1.0" {
		t.Fatalf("trip serves %s after 1.1.0 was added, want 1.1.0", e.Serving.Version)
	}

	// An invalid newer version does not replace the valid one, and its problems show.
	writeFile(t, filepath.Join(root, "trip", "1.2.0", "SKILL.md"), "---\nname: trip\n---\nno description\n")
	publish(t, c, root)
	e, _ := c.Snapshot().Get("trip")
	if e.Serving.Version != "1.1.0" || !strings.Contains(e.Problems().Error(), "version 1.2.0 (invalid, not serving)") {
		t.Fatalf("trip serves %s with problems %q; want 1.1.0 and 1.2.0's problems", e.Serving.Version, e.Problems().Error())
	}

	// An invalid edit of an unversioned folder keeps the old instructions serving.
	writeFile(t, filepath.Join(root, "tax-help", "SKILL.md"), "---\nname: tax-help\ndescription: [unclosed\n---\nbody\n")
	publish(t, c, root)
	e, ok := c.Snapshot().Get("tax-help")
	if !ok || !e.Stale || !strings.Contains(e.Body(), "calc.evaluate") || len(e.Problems().Errors()) == 0 {
		t.Fatalf("after an invalid edit tax-help is %+v; want the old one serving, stale, with the new copy's problems", e)
	}

	// Removing a skill removes it.
	if err := os.RemoveAll(filepath.Join(root, "tax-help")); err != nil {
		t.Fatal(err)
	}
	publish(t, c, root)
	if _, ok := c.Snapshot().Get("tax-help"); ok {
		t.Fatal("tax-help still serves after its folder was removed")
	}

	// A skill that never had a valid copy is shown as rejected, never served.
	writeFile(t, filepath.Join(root, "broken", "SKILL.md"), "---\nname: broken\n---\n")
	publish(t, c, root)
	if _, ok := c.Snapshot().Get("broken"); ok {
		t.Fatal("an invalid skill serves")
	}
	if r := c.Snapshot().Rejected(); len(r) != 1 || r[0].Name != "broken" {
		t.Fatalf("Rejected = %v, want broken", r)
	}
}

func TestSearchRanksByNameAndDescription(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "tax-help", "SKILL.md"), doc("tax-help", "Work out income tax for a salary."))
	writeFile(t, filepath.Join(root, "trip-planner", "SKILL.md"), doc("trip-planner", "Plan a business trip and its hotel budget."))
	c := skills.New()
	publish(t, c, root)
	hits := c.Snapshot().Search("how much income tax on my salary", 5, nil)
	if len(hits) == 0 || hits[0].Entry.Name() != "tax-help" {
		t.Fatalf("hits = %v, want tax-help first", hits)
	}
	none := c.Snapshot().Search("income tax", 5, func(e *skills.Entry) bool { return e.Name() != "tax-help" })
	for _, h := range none {
		if h.Entry.Name() == "tax-help" {
			t.Fatal("Search returned a skill accept refused")
		}
	}
}

func TestReadFileServesListedFilesOnly(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "tax-help", "SKILL.md"), doc("tax-help", "Income tax."))
	writeFile(t, filepath.Join(root, "tax-help", "references", "rates.md"), "# Rates\n")
	c := skills.New()
	publish(t, c, root)
	snap := c.Snapshot()
	if b, err := snap.ReadFile("tax-help", "references/rates.md"); err != nil || string(b) != "# Rates\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	for path, want := range map[string]error{"../x": skillmd.ErrBadPath, "references/none.md": skillmd.ErrNotServed} {
		if _, err := snap.ReadFile("tax-help", path); !errors.Is(err, want) {
			t.Errorf("ReadFile(%q) = %v, want %v", path, err, want)
		}
	}
	if _, err := snap.ReadFile("nope", "SKILL.md"); !errors.Is(err, skills.ErrUnknownSkill) {
		t.Errorf("ReadFile of an unknown skill = %v", err)
	}
}
