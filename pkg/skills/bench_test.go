package skills_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// BenchmarkRescanAndPublish is what every scan of the tree costs for 200 unchanged Agent
// Skills: a cached scan (stat and SKILL.md only) and a publish that finds nothing changed.
func BenchmarkRescanAndPublish(b *testing.B) {
	root := b.TempDir()
	for i := range 200 {
		name := fmt.Sprintf("skill-%03d", i)
		writeFile(b, filepath.Join(root, name, "SKILL.md"), doc(name, fmt.Sprintf("Skill number %d does task %d for the user.", i, i)))
		writeFile(b, filepath.Join(root, name, "references", "a.md"), "# A\n")
	}
	cache := skillmd.NewCache()
	c := skills.New()
	found, _ := cache.Scan(root)
	c.Publish(found)
	b.ResetTimer()
	for b.Loop() {
		found, err := cache.Scan(root)
		if err != nil {
			b.Fatal(err)
		}
		if c.Publish(found) {
			b.Fatal("an unchanged tree published a change")
		}
	}
}

// BenchmarkSearch ranks 200 skills for one request.
func BenchmarkSearch(b *testing.B) {
	root := b.TempDir()
	for i := range 200 {
		name := fmt.Sprintf("skill-%03d", i)
		writeFile(b, filepath.Join(root, name, "SKILL.md"), doc(name, fmt.Sprintf("Skill number %d does task %d for the user.", i, i)))
	}
	c := skills.New()
	found, _ := skillmd.Scan(root)
	c.Publish(found)
	snap := c.Snapshot()
	b.ResetTimer()
	for b.Loop() {
		snap.Search("which skill does task 117", 3, nil)
	}
}
