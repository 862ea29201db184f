package flow

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"

	"github.com/skillhost/skillhost/pkg/registry"
)

// maxConditionDepth bounds the nesting of any/all in termination.
const maxConditionDepth = 16

// validator collects every problem of one flow, each with its path.
type validator struct {
	errs []error
}

func (v *validator) bad(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	v.errs = append(v.errs, errors.New(msg))
}

func (v *validator) err() error { return errors.Join(v.errs...) }

// compile compiles expr at path, reporting a failure there.
func (v *validator) compile(path, expr string, wantBool bool) cel.Program {
	if strings.TrimSpace(expr) == "" {
		v.bad(path, "is empty")
		return nil
	}
	prg, err := compile(expr, wantBool)
	if err != nil {
		v.bad(path, "CEL %q: %s", expr, oneLine(err.Error()))
		return nil
	}
	return prg
}

// oneLine folds CEL's multi-line messages (which draw a caret under the
// error) so that each problem stays one line of the joined error.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		// Drop the echo of the source and the caret line under it.
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "|") {
			kept = append(kept, t)
		}
	}
	return strings.Join(kept, "; ")
}

// flow validates f, applies defaults and compiles its expressions.
func (v *validator) flow(f *Flow, profiles ProfileSet) {
	var profileNames []string
	if profiles != nil {
		profileNames = profiles.Names()
	}
	knownProfile := func(path, name string) {
		if profiles != nil && !slices.Contains(profileNames, name) {
			v.bad(path, "no agent profile named %q (profiles: %s)", name, strings.Join(profileNames, ", "))
		}
	}

	f.byName = map[string]*Participant{}
	if len(f.Participants) == 0 {
		v.bad("participants", "at least one participant is required")
	}
	humans := 0
	for i, p := range f.Participants {
		at := fmt.Sprintf("participants[%d]", i)
		if p == nil {
			v.bad(at, "is empty")
			continue
		}
		if !registry.ValidName(p.Name) {
			v.bad(at+".name", "%q must be lowercase letters and digits joined by single - or _", p.Name)
		} else if _, dup := f.byName[p.Name]; dup {
			v.bad(at+".name", "%q is already the name of another participant; names must be unique", p.Name)
		} else {
			f.byName[p.Name] = p
		}
	}
	for i, p := range f.Participants {
		if p == nil {
			continue
		}
		at := fmt.Sprintf("participants[%d]", i)
		kinds := 0
		for _, set := range []bool{p.Profile != "", p.Tool != "", p.Human} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			v.bad(at, "set exactly one of profile (an agent), tool (a tool agent) and human: true; %d are set", kinds)
		}
		if p.Profile != "" {
			knownProfile(at+".profile", p.Profile)
		}
		if p.Human {
			humans++
			if humans == 2 {
				v.bad(at+".human", "a flow has at most one human participant")
			}
		}
		if p.Tool != "" {
			if skill, tool, err := registry.SplitName(p.Tool); err != nil || !strings.Contains(p.Tool, ".") {
				v.bad(at+".tool", "%q must be a qualified tool name, skill.tool", p.Tool)
			} else if n := len(registry.LLMName(skill, tool)); n > registry.MaxQualifiedName {
				v.bad(at+".tool", "%q is %d characters as skill__tool; the limit is %d", p.Tool, n, registry.MaxQualifiedName)
			}
			if len(p.Arguments) == 0 {
				v.bad(at+".arguments", "a tool agent needs its arguments mapped from the conversation, e.g. {code: text}")
			}
		} else if len(p.Arguments) > 0 {
			v.bad(at+".arguments", "only a tool agent (one with tool set) takes arguments")
		}
		p.args = map[string]cel.Program{}
		for _, arg := range sortedKeys(p.Arguments) {
			if prg := v.compile(at+".arguments."+arg, p.Arguments[arg], false); prg != nil {
				p.args[arg] = prg
			}
		}
		v.context(at+".context", &p.Context, f)
		if p.Reply != nil {
			v.reply(at+".reply", p)
		}
	}

	if f.Start == "" && len(f.Participants) > 0 && f.Participants[0] != nil {
		f.Start = f.Participants[0].Name
	} else if f.Start != "" {
		v.participant("start", f.Start, f)
	}

	v.selection(&f.Selection, f, knownProfile)
	if f.Termination == nil {
		f.Termination = &Condition{MaxRounds: DefaultMaxRounds}
	} else {
		v.condition("termination", f.Termination, f, 0)
		switch roundCap := (&Condition{MaxRounds: DefaultMaxRounds}); {
		// Every flow has a round cap: a run must not loop until its token
		// budget is gone because the file forgot one.
		case f.Termination.hasMaxRounds():
		case f.Termination.Any != nil:
			f.Termination.Any = append(f.Termination.Any, roundCap)
		default:
			f.Termination = &Condition{Any: []*Condition{f.Termination, roundCap}}
		}
	}
	if f.Stall != nil {
		v.stall(f.Stall, f)
	}
}

// participant checks that name is a participant of f.
func (v *validator) participant(path, name string, f *Flow) bool {
	if _, ok := f.byName[name]; !ok {
		var known []string // the names that stand, once each
		for _, p := range f.Participants {
			if p != nil && f.byName[p.Name] == p {
				known = append(known, p.Name)
			}
		}
		v.bad(path, "no participant named %q (participants: %s)", name, strings.Join(known, ", "))
		return false
	}
	return true
}

func (v *validator) needHuman(path, what string, f *Flow) {
	if f.Human() == "" {
		v.bad(path, "%s needs a human participant (one with human: true), and the flow has none", what)
	}
}

func (v *validator) selection(s *Selection, f *Flow, knownProfile func(path, name string)) {
	switch s.Mode {
	case "":
		s.Mode = ModeRoundRobin
		if len(s.Edges) > 0 || s.Selector != nil {
			v.bad("selection.mode", "is required when edges or a selector are given: round_robin, selector or graph")
		}
	case ModeRoundRobin:
		if len(s.Edges) > 0 {
			v.bad("selection.edges", "round_robin takes turns in file order and uses no edges; use mode graph")
		}
		if s.Selector != nil {
			v.bad("selection.selector", "round_robin uses no selector; use mode selector")
		}
	case ModeSelector:
		if s.Selector == nil {
			v.bad("selection.selector", "mode selector needs a selector: {profile: <admin profile>}")
		}
	case ModeGraph:
		if len(s.Edges) == 0 {
			v.bad("selection.edges", "mode graph needs at least one edge")
		}
	default:
		v.bad("selection.mode", "must be round_robin, selector or graph, not %q", s.Mode)
	}
	if sel := s.Selector; sel != nil {
		if sel.Profile == "" {
			v.bad("selection.selector.profile", "name the agent profile that picks the next speaker")
		} else {
			knownProfile("selection.selector.profile", sel.Profile)
		}
		v.intOr("selection.selector.max_attempts", &sel.MaxAttempts, DefaultMaxAttempts, 1, 10)
		switch sel.OnFailure {
		case "":
			sel.OnFailure = FailStop
		case FailStop, FailFirst:
		case FailHuman:
			v.needHuman("selection.selector.on_failure", "on_failure human", f)
		default:
			v.bad("selection.selector.on_failure", "must be stop, human or first, not %q", sel.OnFailure)
		}
		if sel.AllowRepeatSpeaker == nil {
			yes := true
			sel.AllowRepeatSpeaker = &yes
		}
	}
	v.edges(s.Edges, f)
}

func (v *validator) edges(edges []*Edge, f *Flow) {
	f.edges = map[string][]*Edge{}
	otherwise := map[string]int{} // source → index of its otherwise edge
	for i, e := range edges {
		at := fmt.Sprintf("selection.edges[%d]", i)
		if e == nil {
			v.bad(at, "is empty")
			continue
		}
		okFrom := v.participant(at+".from", e.From, f)
		okTo := v.participant(at+".to", e.To, f)
		switch {
		case e.Otherwise && e.When != "":
			v.bad(at, "an otherwise edge is taken when no other edge holds, so it has no when")
		case e.Otherwise:
			if j, dup := otherwise[e.From]; dup {
				v.bad(at+".otherwise", "%q already has an otherwise edge (selection.edges[%d])", e.From, j)
			}
			otherwise[e.From] = i
		case e.When != "":
			e.prog = v.compile(at+".when", e.When, true)
		}
		if okFrom && okTo {
			f.edges[e.From] = append(f.edges[e.From], e)
		}
	}
	if len(edges) == 0 || f.byName[f.Start] == nil {
		return // no graph, or a start already reported unknown
	}
	// Every participant but the human must be reachable from the start:
	// the human gets the turn by handoff, the selector's failure rule or
	// the stall guard, not only by edges.
	seen := map[string]bool{f.Start: true}
	queue := []string{f.Start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range f.edges[n] {
			if !seen[e.To] {
				seen[e.To] = true
				queue = append(queue, e.To)
			}
		}
	}
	for i, p := range f.Participants {
		if p != nil && !p.Human && f.byName[p.Name] == p && !seen[p.Name] {
			v.bad(fmt.Sprintf("participants[%d]", i), "%q is unreachable: no path of edges leads to it from the start, %q", p.Name, f.Start)
		}
	}
}

func (v *validator) context(path string, c *ContextPolicy, f *Flow) {
	switch c.Keep {
	case "":
		c.Keep = KeepAll
		if c.Last != 0 || len(c.Senders) > 0 {
			v.bad(path+".keep", "is required when last or senders are given: last_n or senders")
		}
	case KeepAll, KeepClear:
		if c.Last != 0 || len(c.Senders) > 0 {
			v.bad(path, "keep %s takes neither last nor senders", c.Keep)
		}
	case KeepLastN:
		if c.Last < 1 {
			v.bad(path+".last", "keep last_n needs last, a positive number of messages, not %d", c.Last)
		}
		if len(c.Senders) > 0 {
			v.bad(path+".senders", "keep last_n takes no senders; use keep senders with last")
		}
	case KeepSenders:
		if len(c.Senders) == 0 {
			v.bad(path+".senders", "keep senders needs at least one participant name")
		}
		if c.Last < 0 {
			v.bad(path+".last", "must be positive (or left out for every message of those senders), not %d", c.Last)
		}
	default:
		v.bad(path+".keep", "must be all, last_n, senders or clear, not %q", c.Keep)
	}
	for i, s := range c.Senders {
		v.participant(fmt.Sprintf("%s.senders[%d]", path, i), s, f)
	}
}

func (v *validator) condition(path string, c *Condition, f *Flow, depth int) {
	if c == nil {
		v.bad(path, "is empty")
		return
	}
	if depth > maxConditionDepth {
		v.bad(path, "any/all nest deeper than %d levels", maxConditionDepth)
		return
	}
	set := c.kinds()
	if len(set) != 1 {
		msg := fmt.Sprintf("set exactly one of any, all, max_rounds, text_mention, terminate_tool, token_budget, time_limit, handoff_to_human; %d are set", len(set))
		if len(set) > 1 {
			msg += " (" + strings.Join(set, ", ") + ")"
		}
		v.bad(path, "%s", msg)
		return
	}
	switch set[0] {
	case "any", "all":
		list := c.Any
		if set[0] == "all" {
			list = c.All
		}
		for i, sub := range list {
			v.condition(fmt.Sprintf("%s.%s[%d]", path, set[0], i), sub, f, depth+1)
		}
	case "max_rounds":
		if c.MaxRounds < 1 || c.MaxRounds > 10_000 {
			v.bad(path+".max_rounds", "must be from 1 to 10000, not %d", c.MaxRounds)
		}
	case "text_mention":
		if strings.TrimSpace(c.TextMention) == "" {
			v.bad(path+".text_mention", "is blank; give the word that ends the run, such as TERMINATE")
		}
	case "token_budget":
		if c.TokenBudget < 1 {
			v.bad(path+".token_budget", "must be a positive number of tokens, not %d", c.TokenBudget)
		}
	case "time_limit":
		if c.TimeLimit <= 0 {
			v.bad(path+".time_limit", "must be a positive duration, not %s", c.TimeLimit.String())
		}
	case "handoff_to_human":
		v.needHuman(path+".handoff_to_human", "handoff_to_human", f)
	}
}

func (v *validator) stall(s *StallGuard, f *Flow) {
	v.intOr("stall.window", &s.Window, DefaultStallWindow, 2, 100)
	switch s.Action {
	case "":
		s.Action = StallStop
	case StallStop:
	case StallHuman:
		v.needHuman("stall.action", "action human", f)
	default:
		v.bad("stall.action", "must be stop or human, not %q", s.Action)
	}
}

// intOr sets *x to def when it is zero, and otherwise checks it is from lo
// to hi.
func (v *validator) intOr(path string, x *int, def, lo, hi int) {
	if *x == 0 {
		*x = def
	} else if *x < lo || *x > hi {
		v.bad(path, "must be from %d to %d, not %d", lo, hi, *x)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
