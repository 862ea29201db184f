package skillmd

// Info is what the HTTP API, the CLI and the console show about an Agent Skill: everything a
// person needs to judge it without the instructions themselves, which can be long and are
// served on activation. Build it with Skill.Info.
type Info struct {
	Name        string        `json:"name"`
	Version     string        `json:"version"`
	VersionFrom VersionSource `json:"version_from"`
	// Kind is "instructions" for a folder with SKILL.md alone, "tied" when a binary skill
	// shares the version folder.
	Kind          SkillKind         `json:"kind"`
	Status        Status            `json:"status"`
	Description   string            `json:"description,omitempty"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	AllowedTools  []string          `json:"allowed_tools,omitempty"`
	// InstructionBytes is the size of the body a model receives on activation, for a reader
	// weighing what activating the skill costs in context.
	InstructionBytes int    `json:"instruction_bytes"`
	Files            []File `json:"files"`
	// Tools are the tools activating the skill brings along (ActivationTools).
	Tools    []string `json:"tools"`
	Digest   string   `json:"digest,omitempty"`
	Dir      string   `json:"dir"`
	Problems Problems `json:"problems,omitempty"`
}

// SkillKind tells instruction-only skills from tied ones in listings.
type SkillKind string

const (
	SkillInstructions SkillKind = "instructions" // SKILL.md and its files, no binary
	SkillTied         SkillKind = "tied"         // SKILL.md beside a binary skill's manifest.json
)

// Info summarises the skill for listings; available is the registry's tools, as for
// ActivationTools.
func (s Skill) Info(available []string) Info {
	in := Info{
		Name: s.Name, Version: s.Version, VersionFrom: s.VersionFrom, Kind: SkillInstructions,
		Status: s.Status, Files: s.Files, Tools: s.ActivationTools(available),
		Digest: s.Digest, Dir: s.Dir, Problems: s.Problems,
	}
	if s.Tied {
		in.Kind = SkillTied
	}
	if in.Files == nil {
		in.Files = []File{}
	}
	if in.Tools == nil {
		in.Tools = []string{}
	}
	if d := s.Doc; d != nil {
		in.Description = d.CatalogDescription()
		in.License, in.Compatibility = d.License, d.Compatibility
		in.Metadata, in.AllowedTools = d.Metadata, d.AllowedTools
		in.InstructionBytes = len(d.Body)
	}
	return in
}
