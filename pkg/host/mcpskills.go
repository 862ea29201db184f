package host

import (
	"encoding/json"
	"errors"

	"github.com/skillhost/skillhost/pkg/mcp"
	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// mcpSkills shows the loader's catalog of Agent Skills to the MCP face,
// which reads it through its own small interface (mcp.SkillCatalog): the
// face knows nothing of the loader or of how skills are found.
type mcpSkills struct{ cat *skills.Catalog }

var _ mcp.SkillCatalog = mcpSkills{}

func (s mcpSkills) Changed() <-chan struct{} { return s.cat.Changed() }

// Skills lists the serving copies, sorted by name as the snapshot keeps
// them. A stale entry (its folder went bad) still serves what served
// before, as it does to the agent loop.
func (s mcpSkills) Skills() []mcp.SkillInfo {
	entries := s.cat.Snapshot().List()
	out := make([]mcp.SkillInfo, 0, len(entries))
	for _, e := range entries {
		info := mcp.SkillInfo{Name: e.Name(), Description: e.Description(), Frontmatter: frontmatterMap(e.Serving.Doc.Frontmatter)}
		for _, f := range e.Serving.Files {
			if f.Served {
				info.Files = append(info.Files, mcp.SkillFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
			}
		}
		out = append(out, info)
	}
	return out
}

// ReadFile reads through the snapshot, with skillmd's checks and caps; a
// skill or file that is not served wraps mcp.ErrNoSkillFile.
func (s mcpSkills) ReadFile(skill, path string) ([]byte, error) {
	data, err := s.cat.Snapshot().ReadFile(skill, path)
	if errors.Is(err, skills.ErrUnknownSkill) || errors.Is(err, skillmd.ErrNotServed) || errors.Is(err, skillmd.ErrBadPath) {
		return nil, errors.Join(mcp.ErrNoSkillFile, err)
	}
	return data, err
}

// frontmatterMap is the front matter as a JSON object, as skills/list and
// skills/get carry it; the fields keep their JSON names.
func frontmatterMap(fm skillmd.Frontmatter) map[string]any {
	b, err := json.Marshal(fm)
	if err != nil {
		return map[string]any{"name": fm.Name, "description": fm.Description}
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return map[string]any{"name": fm.Name, "description": fm.Description}
	}
	return m
}

// MCPSkills is the host's Agent Skills as an MCP face reads them, for a
// face the caller builds itself (host mcp over stdio).
func (h *Host) MCPSkills() mcp.SkillCatalog { return mcpSkills{h.ld.Catalog()} }
