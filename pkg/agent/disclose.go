package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/pkg/registry/openaitools"
	"github.com/skillhost/skillhost/pkg/skillmd"
	"github.com/skillhost/skillhost/pkg/skills"
)

// Progressive disclosure: a run starts with the few tools the prefilter picked and a short
// catalog of the Agent Skills that fit the request, and the model asks for more itself.
// activate_skill hands it a skill's instructions and brings the tools they name;
// read_skill_file reads a file the instructions refer to; search_tools searches the registry
// (and the skills) again. Whatever they add joins the tool set from the next turn, under the
// profile's max_added_tools and the context budget, and only when the profile permits it: a
// read-only profile never gets a write tool this way.
//
// Their names cannot collide with registry tools, which always hold "__", nor with delegates.
const (
	toolActivateSkill = "activate_skill"
	toolReadSkillFile = "read_skill_file"
	toolSearchTools   = "search_tools"
	// maxSearchHits bounds what one search_tools call returns.
	maxSearchHits = 10
)

var (
	activateParams = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1,` +
		`"description":"The skill's name, as the catalog or search_tools gave it."}},"required":["name"],"additionalProperties":false}`)
	readFileParams = json.RawMessage(`{"type":"object","properties":{"skill":{"type":"string","minLength":1},` +
		`"path":{"type":"string","minLength":1,"description":"The file's path relative to the skill folder, as the instructions refer to it, e.g. references/forms.md."}},` +
		`"required":["skill","path"],"additionalProperties":false}`)
	searchParams = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What you need to do, in words."},` +
		`"tags":{"type":"array","items":{"type":"string"},"description":"Only tools carrying one of these tags."},` +
		`"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"],"additionalProperties":false}`)
)

// The disclosure tools as the model is offered them.
var (
	activateTool = builtinTool(toolActivateSkill, "Load an Agent Skill's instructions by name; the tools they use become available from your next turn.", activateParams)
	readFileTool = builtinTool(toolReadSkillFile, "Read a file an activated skill's instructions refer to (references, templates, scripts as text).", readFileParams)
	searchTool   = builtinTool(toolSearchTools, "Search all tools (and Agent Skills) again when none of yours fit. Tools found are added to yours from your next turn.", searchParams)
)

func builtinTool(name, desc string, params json.RawMessage) openai.Tool {
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Description: desc, Parameters: params}}
}

// skillFilter is the profile's bound on the Agent Skills it may see, in registry.Filter's
// terms: Skills are names, Tags match a skill's metadata tags, any one of them.
func (p *Profile) skillFilter() registry.Filter {
	return registry.Filter{Tags: p.AgentSkillTags, Skills: p.AgentSkills}
}

// permitsSkill reports whether the profile may see and activate e.
func (p *Profile) permitsSkill(e *skills.Entry) bool {
	if len(p.AgentSkills) > 0 && !slices.Contains(p.AgentSkills, e.Name()) {
		return false
	}
	if len(p.AgentSkillTags) > 0 && !slices.ContainsFunc(e.Tags, func(t string) bool { return slices.Contains(p.AgentSkillTags, t) }) {
		return false
	}
	return true
}

// disclosure is what a session's built-in tools share while one turn's calls run
// concurrently: the tools they add wait in pending until the turn is over.
type disclosure struct {
	mu      sync.Mutex // guards the fields below
	pending []*registry.Tool
	claimed map[string]bool // LLM names offered, pending or refused for good
	added   int             // tools added by this session, pending included
}

// offerDisclosure adds the skill catalog and the built-in tools to a new session, after
// the prefilter's pick.
func (s *session) offerDisclosure(text string) {
	s.disc.claimed = map[string]bool{}
	for name := range s.offered {
		s.disc.claimed[name] = true
	}
	var catalog *skills.Snapshot
	if c := s.r.a.cfg.Skills; c != nil {
		catalog = c.Snapshot()
	}
	anySkill := false
	if catalog != nil {
		for _, e := range catalog.List() {
			if s.p.permitsSkill(e) {
				anySkill = true
				break
			}
		}
	}
	var hits []skills.Hit
	if anySkill && s.p.MaxSkills > 0 {
		hits = catalog.Search(text, s.p.MaxSkills, s.p.permitsSkill)
	}
	if len(hits) > 0 {
		var b strings.Builder
		b.WriteString("Agent Skills that may fit this request. Each is a set of instructions; call activate_skill with its name to read them (and get the tools they use) before you follow one:\n")
		for _, h := range hits {
			fmt.Fprintf(&b, "- %s: %s\n", h.Entry.Name(), h.Entry.Description())
		}
		s.msgs = slices.Insert(s.msgs, s.systemEnd(), openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: strings.TrimRight(b.String(), "\n")})
	}
	search := s.p.MaxAddedTools > 0 && (s.moreTools() || anySkill && len(hits) == 0)
	if len(hits) > 0 || (search && anySkill) {
		s.builtins = append(s.builtins, toolActivateSkill, toolReadSkillFile)
		s.tools = append(s.tools, activateTool, readFileTool)
	}
	if search {
		s.builtins = append(s.builtins, toolSearchTools)
		s.tools = append(s.tools, searchTool)
	}
}

// systemEnd is the index after the leading system messages.
func (s *session) systemEnd() int {
	i := 0
	for i < len(s.msgs) && s.msgs[i].Role == openai.ChatMessageRoleSystem {
		i++
	}
	return i
}

// moreTools reports whether the profile may use tools it was not offered.
func (s *session) moreTools() bool {
	snap := s.r.a.cfg.Registry.Snapshot()
	n := 0
	for _, h := range snap.Search(registry.Query{Filter: s.p.Filter(), Limit: len(s.offered) + 1}) {
		if s.p.permits(h.Tool) {
			n++
		}
	}
	return n > len(s.offered)
}

// isBuiltin reports whether name is one of the disclosure tools this session offers.
func (s *session) isBuiltin(name string) bool { return slices.Contains(s.builtins, name) }

// execBuiltin runs a disclosure tool. Tools it adds take their definitions' cost from room,
// the turn's share of the context budget, so the next request still fits.
func (s *session) execBuiltin(ctx context.Context, tc openai.ToolCall, room *budgetRoom) (string, *registry.Error) {
	switch tc.Function.Name {
	case toolActivateSkill:
		var in struct {
			Name string `json:"name"`
		}
		if e := decodeArgs(tc, &in); e != nil {
			return "", e
		}
		return s.activate(in.Name, room)
	case toolReadSkillFile:
		var in struct{ Skill, Path string }
		if e := decodeArgs(tc, &in); e != nil {
			return "", e
		}
		return s.readSkillFile(in.Skill, in.Path)
	default:
		var in struct {
			Query string   `json:"query"`
			Tags  []string `json:"tags"`
			Limit int      `json:"limit"`
		}
		if e := decodeArgs(tc, &in); e != nil {
			return "", e
		}
		return s.searchTools(ctx, in.Query, in.Tags, in.Limit, room)
	}
}

// decodeArgs reads a built-in tool's arguments strictly.
func decodeArgs(tc openai.ToolCall, v any) *registry.Error {
	args := strings.TrimSpace(tc.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return registry.Errorf(registry.CodeInvalidArguments, "arguments of %s do not match its parameters: %v", tc.Function.Name, err).With("tool", tc.Function.Name)
	}
	return nil
}

// skill finds a skill the profile may see, on the catalog as it is now.
func (s *session) skill(name string) (*skills.Entry, *skills.Snapshot, *registry.Error) {
	if c := s.r.a.cfg.Skills; c != nil {
		snap := c.Snapshot()
		if e, ok := snap.Get(name); ok && s.p.permitsSkill(e) {
			return e, snap, nil
		}
	}
	return nil, nil, registry.Errorf(registry.CodeNotFound, "no Agent Skill %q is available to profile %s; use a name from the catalog or from search_tools", name, s.p.Name).With("skill", name)
}

type addedTools struct {
	Added   []string  `json:"tools_added,omitempty"`
	Refused []refusal `json:"tools_not_added,omitempty"`
}

type refusal struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

// activate returns the skill's instructions and adds the tools they name.
func (s *session) activate(name string, room *budgetRoom) (string, *registry.Error) {
	e, _, err := s.skill(name)
	if err != nil {
		return "", err
	}
	reg := s.r.a.cfg.Registry.Snapshot()
	available := make([]string, 0, reg.Len())
	for _, t := range reg.Tools() {
		available = append(available, t.Name)
	}
	var tools []*registry.Tool
	for _, q := range e.Serving.ActivationTools(available) {
		if t, ok := reg.Tool(q); ok {
			tools = append(tools, t)
		}
	}
	var files []string
	for _, f := range e.Serving.Files {
		if f.Served && f.Kind != skillmd.KindInstructions {
			files = append(files, f.Path)
		}
	}
	out := struct {
		Skill        string   `json:"skill"`
		Version      string   `json:"version"`
		Instructions string   `json:"instructions"`
		Files        []string `json:"files,omitempty"`
		addedTools
	}{Skill: e.Name(), Version: e.Serving.Version, Instructions: e.Body(), Files: files}
	reserve, _ := json.Marshal(out)
	out.addedTools = s.add(tools, room, toolMessageCost(string(reserve), "call_0000000000")+len(tools)*perToolReserve)
	b, _ := json.Marshal(out)
	s.r.count(func(c *Counters) { c.SkillActivations++ })
	return string(b), nil
}

// perToolReserve is what naming one tool (added, or not with a reason) adds to an answer.
const perToolReserve = 40

// add queues tools for the next turn: only those the profile permits, that are available,
// not offered yet, within max_added_tools and within what is left of the budget once reserve
// tokens are kept for the answer that reports them.
func (s *session) add(tools []*registry.Tool, room *budgetRoom, reserve int) addedTools {
	var out addedTools
	s.disc.mu.Lock()
	defer s.disc.mu.Unlock()
	for _, t := range tools {
		reason := ""
		switch {
		case !s.p.permits(t):
			reason = fmt.Sprintf("profile %s may not use it", s.p.Name)
		case !t.Available():
			reason = "unavailable right now"
		case s.disc.claimed[t.LLMName]:
			continue // yours already
		case s.disc.added >= s.p.MaxAddedTools:
			reason = fmt.Sprintf("profile %s's max_added_tools (%d) is reached", s.p.Name, s.p.MaxAddedTools)
		case len(s.tools)+len(s.disc.pending) >= registry.MaxLimit:
			// s.tools changes only between turns (applyAdded), never while calls run.
			reason = fmt.Sprintf("a request carries at most %d tools", registry.MaxLimit)
		}
		if reason == "" {
			cost := estimateTools([]openai.Tool{openaitools.Tool(t)})
			// The answer that lists this tool must still fit after it: reserve its room
			// while taking the definition's, then hand the reserve back for the answer.
			if left, ok := room.take(cost + reserve + perToolReserve); !ok {
				reason = fmt.Sprintf("its definition (about %d tokens) does not fit the %d left in the context budget", cost, max(left-reserve, 0))
			} else {
				room.charge(-reserve - perToolReserve)
			}
		}
		if reason != "" {
			out.Refused = append(out.Refused, refusal{Tool: t.LLMName, Reason: reason})
			continue
		}
		s.disc.claimed[t.LLMName] = true
		s.disc.added++
		s.disc.pending = append(s.disc.pending, t)
		out.Added = append(out.Added, t.LLMName)
	}
	return out
}

// applyAdded moves the tools added during a turn into the tool set, for the next request.
func (s *session) applyAdded() {
	s.disc.mu.Lock()
	pending := s.disc.pending
	s.disc.pending = nil
	s.disc.mu.Unlock()
	for _, t := range pending {
		s.offered[t.LLMName] = t
		s.tools = append(s.tools, openaitools.Tool(t))
	}
	if len(pending) > 0 {
		names := make([]string, len(pending))
		for i, t := range pending {
			names[i] = t.LLMName
		}
		s.r.emit(s.event(EventToolsAdded, func(e *Event) { e.Tools = names }))
	}
}

// readSkillFile reads one file of a skill the profile may see, as text.
func (s *session) readSkillFile(name, path string) (string, *registry.Error) {
	e, snap, err := s.skill(name)
	if err != nil {
		return "", err
	}
	data, rerr := snap.ReadFile(e.Name(), path)
	switch {
	case errors.Is(rerr, skillmd.ErrBadPath):
		return "", registry.Errorf(registry.CodeInvalidArguments, "%q is not a plain path inside skill %s (relative, no .. or hidden names)", path, name).With("skill", name)
	case errors.Is(rerr, skillmd.ErrNotServed):
		return "", registry.Errorf(registry.CodeNotFound, "skill %s has no file %q it serves (over 1 MiB, missing, or outside the folder)", name, path).With("skill", name)
	case rerr != nil:
		e := registry.Errorf(registry.CodeSkillUnavailable, "skill %s: %v; try again in a moment", name, rerr)
		e.Retryable = true
		return "", e
	case !utf8.Valid(data):
		return "", registry.Errorf(registry.CodeInvalidArguments, "%s in skill %s is a binary file (%d bytes); only text files can be read", path, name, len(data))
	}
	b, _ := json.Marshal(struct {
		Skill   string `json:"skill"`
		Path    string `json:"path"`
		Content string `json:"content"`
	}{name, path, string(data)})
	return string(b), nil
}

// searchTools searches the registry under the profile's filter (and the model's tags) and
// the skill catalog, and adds the tools found.
func (s *session) searchTools(ctx context.Context, query string, tags []string, limit int, room *budgetRoom) (string, *registry.Error) {
	if limit <= 0 || limit > maxSearchHits {
		limit = min(max(limit, 0), maxSearchHits)
		if limit == 0 {
			limit = registry.DefaultLimit
		}
	}
	for i := range tags {
		tags[i] = strings.ToLower(strings.TrimSpace(tags[i]))
	}
	s.r.count(func(c *Counters) { c.ToolSearches++ })
	snap := s.r.a.cfg.Registry.Snapshot()
	var found []*registry.Tool
	type toolHit struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	var shown []toolHit
	for _, h := range snap.SearchContext(ctx, registry.Query{Text: query, Filter: s.p.Filter(), Limit: registry.MaxLimit}) {
		if len(found) == limit {
			break
		}
		if !s.p.permits(h.Tool) || (len(tags) > 0 && !slices.ContainsFunc(h.Tool.Tags, func(t string) bool { return slices.Contains(tags, strings.ToLower(t)) })) {
			continue
		}
		found = append(found, h.Tool)
		shown = append(shown, toolHit{h.Tool.LLMName, h.Tool.Description})
	}
	type skillHit struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	var sk []skillHit
	if c := s.r.a.cfg.Skills; c != nil && s.p.MaxSkills > 0 {
		for _, h := range c.Snapshot().Search(query, s.p.MaxSkills, s.p.permitsSkill) {
			sk = append(sk, skillHit{h.Entry.Name(), h.Entry.Description()})
		}
	}
	out := struct {
		Tools  []toolHit  `json:"tools"`
		Skills []skillHit `json:"skills,omitempty"`
		addedTools
	}{Tools: shown, Skills: sk}
	reserve, _ := json.Marshal(out)
	out.addedTools = s.add(found, room, toolMessageCost(string(reserve), "call_0000000000")+len(found)*perToolReserve)
	if out.Tools == nil {
		out.Tools = []toolHit{}
	}
	b, _ := json.Marshal(out)
	return string(b), nil
}
