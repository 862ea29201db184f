package manifest_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/manifest"
)

// Parse reports every problem at once, each at its JSON path, so an author can fix the whole
// manifest in one go.
func ExampleParse() {
	_, problems := manifest.Parse([]byte(`{
		"manifest_version": 1,
		"name": "Calc",
		"version": "v1.0.0",
		"description": "Adds numbers.",
		"entrypoint": "../calc",
		"sha256": "3a",
		"limits": {"timeout_ms": 900000, "concurrency": 8}
	}`))
	for _, p := range problems {
		fmt.Printf("%s: %s\n", p.Path, p.Message)
	}
	// Output:
	// $.entrypoint: "../calc" escapes the version folder
	// $.limits.concurrency: unknown field; did you mean "max_concurrency"?
	// $.limits.timeout_ms: 900000 is over the maximum 600000
	// $.name: "Calc" does not match ^[a-z][a-z0-9]*([_-][a-z0-9]+)*$ (lowercase letters and digits, words joined by a single _ or -)
	// $.sha256: "3a" does not match ^[0-9a-f]{64}$ (64 lowercase hex digits, as printed by sha256sum)
	// $.version: "v1.0.0" is not a strict semantic version (MAJOR.MINOR.PATCH, no leading "v"): invalid characters in version
}

// A Problems value is also an error, for plumbing that only carries errors.
func ExampleProblems_Err() {
	_, problems := manifest.Parse([]byte(`{"manifest_version": 1}`))
	if err := problems.Err(); err != nil {
		fmt.Println(len(problems), "problems; first:", problems[0])
	}
	// Output:
	// 5 problems; first: $.description: is required but missing
}
