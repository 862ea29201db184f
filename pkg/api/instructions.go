package api

import (
	"errors"
	"mime"
	"net/http"
	"path"
	"unicode/utf8"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// Kinds of skill in listings.
const (
	KindBinary       = "binary"       // a manifest.json and a program (or an MCP server)
	KindInstructions = "instructions" // an Agent Skill: SKILL.md and its files, nothing runs
	KindTied         = "tied"         // both in one version folder: instructions for the binary's tools
)

// Instructions is the Agent Skill side of a skill (SKILL.md): what serves, and what the
// listing needs to judge it. The instructions themselves are served on activation, and its
// files by GET /v1/skills/{name}/files/{path}.
type Instructions struct {
	Version     string `json:"version"`
	VersionFrom string `json:"version_from"` // folder, metadata, version or digest
	// Stale: no copy found now is valid, and this one, which served before, still does.
	Stale         bool              `json:"stale,omitempty"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	AllowedTools  []string          `json:"allowed_tools,omitempty"`
	// InstructionBytes is the size of the body a model receives on activation.
	InstructionBytes int `json:"instruction_bytes"`
	// Tools are the tools activation brings along: those the instructions name.
	Tools    []string  `json:"tools"`
	Files    []File    `json:"files"`
	Digest   string    `json:"digest"`
	Problems []Problem `json:"problems,omitempty"`
}

// File is one file of an Agent Skill's folder.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Kind   string `json:"kind"` // instructions, script, reference, asset or other
	Served bool   `json:"served"`
	SHA256 string `json:"sha256,omitempty"`
}

// instructionsOf converts a catalog entry at the edge; available is the registry's tools.
func instructionsOf(e *skills.Entry, available []string) *Instructions {
	in := e.Serving.Info(available)
	out := &Instructions{
		Version: in.Version, VersionFrom: string(in.VersionFrom), Stale: e.Stale,
		License: in.License, Compatibility: in.Compatibility, Metadata: in.Metadata, AllowedTools: in.AllowedTools,
		InstructionBytes: in.InstructionBytes, Tools: in.Tools, Files: make([]File, len(in.Files)), Digest: in.Digest,
		Problems: skillProblems(e.Problems()),
	}
	for i, f := range in.Files {
		out.Files[i] = File{Path: f.Path, Size: f.Size, Kind: string(f.Kind), Served: f.Served, SHA256: f.SHA256}
	}
	return out
}

func skillProblems(ps skillmd.Problems) []Problem {
	var out []Problem
	for _, p := range ps {
		msg := p.Message
		if p.Warning {
			msg = "warning: " + msg
		}
		out = append(out, Problem{Path: p.Where(), Message: msg})
	}
	return out
}

// copiesOf lists the copies a scan found of an Agent Skill as versions: the serving one
// "active", the others by their verdict.
func copiesOf(found []skillmd.Skill, serving skillmd.Skill) []Version {
	out := make([]Version, 0, len(found))
	for _, c := range found {
		state := string(c.Status)
		if c.Version == serving.Version && c.Digest == serving.Digest && c.Status == skillmd.StatusValid {
			state = "active"
		}
		out = append(out, Version{Version: c.Version, State: state, Problems: skillProblems(c.Problems)})
	}
	return out
}

// withInstructions adds the catalog to a listing of binary skills: a binary skill with
// instructions beside it becomes tied, and instruction-only skills are appended, those
// that serve and those that never did.
func (s *Server) withInstructions(list []Skill) []Skill {
	c := s.cfg.Catalog
	if c == nil {
		return list
	}
	snap := c.Snapshot()
	available := s.toolNames()
	byName := map[string]int{}
	for i, sk := range list {
		byName[sk.Name] = i
	}
	for _, e := range snap.List() {
		if i, ok := byName[e.Name()]; ok {
			list[i].Kind, list[i].Description, list[i].Instructions = KindTied, e.Description(), instructionsOf(e, available)
			continue
		}
		list = append(list, instructionSkill(e, available))
	}
	for _, r := range snap.Rejected() {
		if _, ok := byName[r.Name]; ok {
			continue
		}
		if n := len(list); n > 0 && list[n-1].Name == r.Name && list[n-1].Kind == KindInstructions {
			list[n-1].Versions = append(list[n-1].Versions, copiesOf([]skillmd.Skill{r}, skillmd.Skill{})...)
			continue
		}
		list = append(list, Skill{Name: r.Name, Kind: KindInstructions, Reason: "no valid SKILL.md",
			Versions: copiesOf([]skillmd.Skill{r}, skillmd.Skill{})})
	}
	return list
}

func instructionSkill(e *skills.Entry, available []string) Skill {
	return Skill{Name: e.Name(), Kind: KindInstructions, Active: e.Serving.Version, Description: e.Description(),
		Versions: copiesOf(e.Found, e.Serving), Instructions: instructionsOf(e, available)}
}

func (s *Server) toolNames() []string {
	tools := s.cfg.Registry.Snapshot().Tools()
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// instructionOnly finds an Agent Skill that no binary skill of that name shares.
func (s *Server) instructionOnly(name string) (Skill, bool) {
	if s.cfg.Catalog == nil {
		return Skill{}, false
	}
	for _, sk := range s.withInstructions(nil) {
		if sk.Name == name {
			return sk, true
		}
	}
	return Skill{}, false
}

// skillFile serves one file of an Agent Skill, read-only, with skillmd's checks and caps.
// The answer can never run in a browser: no sniffing, and a sandboxing CSP, since a skill's
// assets may be HTML or SVG and the API's origin holds its tokens.
func (s *Server) skillFile(w http.ResponseWriter, r *http.Request) {
	name, rel := r.PathValue("name"), r.PathValue("path")
	if s.cfg.Catalog == nil {
		writeError(w, notFound("skill %q has no instructions (SKILL.md) serving", name))
		return
	}
	data, err := s.cfg.Catalog.Snapshot().ReadFile(name, rel)
	switch {
	case errors.Is(err, skills.ErrUnknownSkill):
		writeError(w, notFound("skill %q has no instructions (SKILL.md) serving", name).With("skill", name))
		return
	case errors.Is(err, skillmd.ErrBadPath):
		writeError(w, badRequest("path %q: %v", rel, skillmd.ErrBadPath).With("skill", name).With("path", rel))
		return
	case errors.Is(err, skillmd.ErrNotServed):
		writeError(w, notFound("skill %s: %q is %v (missing, over %d bytes, hidden, or a link out of the folder)", name, rel, skillmd.ErrNotServed, skillmd.MaxFileBytes).
			With("skill", name).With("path", rel))
		return
	case err != nil:
		e := registry.Errorf(registry.CodeSkillUnavailable, "skill %s: %s: %v; it is reloading, try again", name, rel, err)
		e.Retryable = true
		writeError(w, e)
		return
	}
	ct := mime.TypeByExtension(path.Ext(rel))
	switch {
	case !utf8.Valid(data) && (ct == "" || isText(ct)):
		ct = "application/octet-stream"
	case ct == "" || path.Base(rel) == skillmd.FileName:
		ct = "text/plain; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", "inline")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(data)
	}
}

func isText(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return len(mt) > 5 && mt[:5] == "text/"
}
