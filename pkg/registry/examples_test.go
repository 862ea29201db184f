package registry_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestExampleSkillsRanking ranks requests over the example skills exactly as
// the daemon serves them: built by scripts/build-skills.sh, started by the
// loader, their tools as each skill describes them over gRPC.
func TestExampleSkillsRanking(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the example skills")
	}
	root := t.TempDir()
	if err := testenv.BuildExamples(root); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(registry.Config{})
	ld, err := loader.New(loader.Config{Skills: root, Registry: reg, Grace: 2 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ld.Close(context.Background()); err != nil {
			t.Errorf("close loader: %v", err)
		}
	})
	if err := ld.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap := reg.Snapshot()
	for _, skill := range []string{"calc", "policy", "textkit"} {
		if _, ok := snap.SkillVersion(skill); !ok {
			t.Fatalf("example skill %s is not serving", skill)
		}
	}

	for _, tc := range []struct{ query, want string }{
		// Spelled out: "times" and "plus" must point at arithmetic, not at
		// the "time" units of convert_units.
		{"what is 17 times 23 plus 4", "calc.evaluate"},
		// A bare expression has no word at all but its operators.
		{"what is 17*23+4?", "calc.evaluate"},
		{"calculate (17*23)+4", "calc.evaluate"},
		{"12 × 3 ÷ 4", "calc.evaluate"},
		{"how many km is 5 miles", "calc.convert_units"},
		{"convert 100 F to C", "calc.convert_units"},
	} {
		hits := snap.Search(registry.Query{Text: tc.query})
		if len(hits) == 0 || hits[0].Tool.Name != tc.want {
			var got []string
			for _, h := range hits {
				got = append(got, h.Tool.Name)
			}
			t.Errorf("%q ranks %v, want %s first", tc.query, got, tc.want)
		}
	}
}
