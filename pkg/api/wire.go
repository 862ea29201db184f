package api

import (
	"encoding/json"
	"time"

	"github.com/skillhost/skillhost/internal/httpjson"
	"github.com/skillhost/skillhost/pkg/registry"
)

// The API's wire types: what its JSON answers hold, and what a client (the
// CLI) decodes them into. They are the API's own, converted from the
// loader's and the registry's types at the edge (the registry's here, the
// loader's in pkg/host, which knows both sides), so renaming a field there
// cannot silently change the public API; testdata/*.golden pins the JSON.

// SkillList is the answer of GET /v1/skills and POST /v1/rescan.
type SkillList struct {
	Skills []Skill `json:"skills"`
	// Problems are the tree's own, which belong to no version (a stray
	// file in the root).
	Problems []Problem `json:"problems,omitempty"`
}

// Skill is one skill and its versions: the answer of GET /v1/skills/{name}
// and of the operator actions.
type Skill struct {
	Name string `json:"name"`
	// Kind is binary, instructions (an Agent Skill: SKILL.md, nothing runs) or tied (both).
	Kind        string    `json:"kind"`
	Description string    `json:"description,omitempty"` // an Agent Skill's, as its catalog shows it
	Active      string    `json:"active,omitempty"`      // the version serving, if any
	Disabled    bool      `json:"disabled"`
	Pinned      string    `json:"pinned,omitempty"`
	Reason      string    `json:"reason,omitempty"` // why nothing serves, when nothing does
	Versions    []Version `json:"versions"`
	// Instructions is the Agent Skill side (kind instructions or tied).
	Instructions *Instructions `json:"instructions,omitempty"`
}

// Version is one version folder of a skill.
type Version struct {
	Version       string     `json:"version"`
	State         string     `json:"state"`             // docs/operations.md lists the states
	Runtime       string     `json:"runtime,omitempty"` // "go-plugin" or "mcp" (an MCP server), from the manifest
	PID           int        `json:"pid,omitempty"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	InFlight      int64      `json:"in_flight"`
	Restarts      int        `json:"restarts"`
	LastError     string     `json:"last_error,omitempty"`
	Problems      []Problem  `json:"problems,omitempty"`
	Tools         []string   `json:"tools,omitempty"`
	Uses          []string   `json:"uses,omitempty"` // what the version may call through the host (its manifest's uses)
	DrainDeadline *time.Time `json:"drain_deadline,omitempty"`
}

// Problem is one thing wrong with a folder or manifest, at its JSON path.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// ToolList is the answer of GET /v1/tools.
type ToolList struct {
	Tools []Tool `json:"tools"`
}

// Tool is one tool: the answer of GET /v1/tools/{name}.
type Tool struct {
	Skill        string          `json:"skill"`
	Version      string          `json:"version"`
	Name         string          `json:"name"`     // skill.tool
	LLMName      string          `json:"llm_name"` // skill__tool
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Tags         []string        `json:"tags"` // the tool's own and its skill's
	Annotations  Annotations     `json:"annotations"`
	Available    bool            `json:"available"`
	Score        *float64        `json:"score,omitempty"` // in a ranked pick only
}

// Annotations are the hints a skill gives about a tool.
type Annotations struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

// ErrorBody is every error answer: {"error": {"code", "message",
// "retryable", "details"}}, the shape every face of the host shares.
type ErrorBody = httpjson.ErrorBody

func toolOf(t *registry.Tool) Tool {
	a := t.Annotations
	return Tool{
		Skill: t.Skill, Version: t.Version, Name: t.Name, LLMName: t.LLMName, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Tags: t.Tags,
		Annotations: Annotations{ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld},
		Available:   t.Available(),
	}
}
