package skills_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// A catalog over the fixtures of pkg/skillmd: the skill that fits a request is a search.
func Example() {
	found, err := skillmd.Scan("../skillmd/testdata/skills")
	if err != nil {
		panic(err)
	}
	c := skills.New()
	c.Publish(found)
	snap := c.Snapshot()
	for _, e := range snap.List() {
		fmt.Println(e.Name(), e.Serving.VersionFrom)
	}
	hit := snap.Search("fill in this PDF form", 1, nil)[0]
	fmt.Println("fits:", hit.Entry.Name())
	// Output:
	// brand-guidelines digest
	// changelog-writer digest
	// pdf-processing metadata
	// fits: pdf-processing
}
