package api_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// fixtureCatalog serves pkg/skillmd's three example Agent Skills, read in place.
func fixtureCatalog(t testing.TB) *skills.Catalog {
	t.Helper()
	found, err := skillmd.Scan("../skillmd/testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	c := skills.New()
	c.Publish(found)
	return c
}

func TestSkillFilesAreServedReadOnly(t *testing.T) {
	srv := newTestServer(t, fixtureSkills())
	want, err := os.ReadFile("../skillmd/testdata/skills/pdf-processing/references/forms.md")
	if err != nil {
		t.Fatal(err)
	}
	w := do(t, srv, "GET", "/v1/skills/pdf-processing/files/references/forms.md", "")
	if w.Code != http.StatusOK || w.Body.String() != string(want) {
		t.Fatalf("GET a reference = %d %q", w.Code, w.Body)
	}
	if h := w.Header(); h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("headers = %v; a skill's file must never run in a browser", h)
	}
	if w := do(t, srv, "GET", "/v1/skills/brand-guidelines/files/assets/logo.svg", ""); w.Code != http.StatusOK || w.Header().Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("GET an SVG asset = %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	for target, want := range map[string]int{
		"/v1/skills/nope/files/SKILL.md":                  http.StatusNotFound,
		"/v1/skills/calc/files/SKILL.md":                  http.StatusNotFound, // a binary skill has no instructions
		"/v1/skills/pdf-processing/files/references/x.md": http.StatusNotFound,
		"/v1/skills/pdf-processing/files/.hidden":         http.StatusBadRequest,
	} {
		if w := do(t, srv, "GET", target, ""); w.Code != want {
			t.Errorf("GET %s = %d %s, want %d", target, w.Code, w.Body, want)
		}
	}
	if w := do(t, srv, "PUT", "/v1/skills/pdf-processing/files/SKILL.md", "x"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT a skill file = %d, want 405", w.Code)
	}
}
