package agent

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/skillhost/skillhost/internal/filtertest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestFilterTable runs the filter table every face shares against agent
// profiles: each case becomes a profile (tags, match, skills, and
// read_only as its mode), and a real run reports the tools it offered.
func TestFilterTable(t *testing.T) {
	reg := filtertest.Registry(t)
	filtertest.Run(t, filtertest.Face{
		List: func(t *testing.T, q url.Values) ([]string, error) {
			// A query without read_only lets every tool through; a profile
			// without a mode is read-only, so the adapter says full.
			p := map[string]any{"max_tools": registry.MaxLimit, "mode": ModeFull}
			if tags := registry.ListParam(q, "tags"); tags != nil {
				p["tags"] = tags
			}
			if skills := registry.ListParam(q, "skills"); skills != nil {
				p["skills"] = skills
			}
			if m, ok := q["match"]; ok {
				p["match"] = m[0]
			}
			if ro, ok := q["read_only"]; ok {
				// A profile says read-only with its mode. A value the
				// shared parser does not read goes in as a mode the
				// profile must refuse.
				p["mode"] = fmt.Sprint(ro)
				if b, err := registry.ParseBool(ro[0]); err == nil && len(ro) == 1 {
					p["mode"] = map[bool]Mode{true: ModeReadOnly, false: ModeFull}[b]
				}
			}
			doc, _ := json.Marshal(map[string]any{"profiles": map[string]any{"p": p}})
			if _, err := ParseProfiles(doc, "json"); err != nil {
				// A profiles file is refused as a whole when the host
				// starts; here it stands for the request's refusal.
				return nil, registry.Errorf(registry.CodeBadRequest, "%v", err)
			}
			f := newFakeLLM(t, text("done"))
			a, _ := newTestAgent(t, f, string(doc), func(c *Config) { c.Registry = reg })
			resp, err := ask(a, "p", "which "+filtertest.Word+"?", false, nil)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, n := range resp.ToolsOffered {
				skill, tool, err := registry.SplitName(n)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, registry.Qualified(skill, tool))
			}
			return names, nil
		},
		Param: func(p string) string {
			if p == "read_only" {
				p = "mode"
			}
			return "profiles.p." + p
		},
	})
}
