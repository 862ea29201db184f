package flow

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of choosing the next speaker, for the run engine to turn into a
// stop reason. Test with errors.Is; the returned errors say which speaker
// and which edges.
var (
	// ErrNoNextHop: no edge from the current speaker holds (and it has no
	// otherwise edge). The run stops with stop reason no_next_hop.
	ErrNoNextHop = errors.New("no next hop")
	// ErrAmbiguousNextHop: in pure workflow mode (graph without a
	// selector) more than one edge holds. Write conditions that exclude
	// each other, add an otherwise edge, or configure a selector.
	ErrAmbiguousNextHop = errors.New("more than one next hop")
)

// NextCandidates returns who may speak next after the turn described by s,
// in file order:
//
//   - before anyone has spoken (s.Sender == ""): the start participant;
//   - round_robin: the participant after s.Sender;
//   - selector without edges: every participant, less s.Sender when the
//     selector does not allow a repeat speaker;
//   - with edges (graph, or selector narrowed by a graph): the targets of
//     the edges from s.Sender whose conditions hold, or of its otherwise
//     edge when none does. In pure workflow mode (graph without a
//     selector) exactly one must hold, else ErrAmbiguousNextHop; none
//     holding is ErrNoNextHop in either mode.
//
// Conditions are evaluated with the cost limit; an evaluation error (a
// missing map key, a dyn value that is not a bool, the cost limit) is
// returned naming the edge, never read as false.
func (f *Flow) NextCandidates(s State) ([]string, error) {
	if s.Sender == "" {
		return []string{f.Start}, nil
	}
	cur, ok := f.byName[s.Sender]
	if !ok {
		return nil, fmt.Errorf("the last speaker %q is not a participant of flow %s", s.Sender, f.Name)
	}
	sel := f.Selection
	switch {
	case sel.Mode == ModeRoundRobin:
		for i, p := range f.Participants {
			if p == cur {
				return []string{f.Participants[(i+1)%len(f.Participants)].Name}, nil
			}
		}
	case len(sel.Edges) == 0: // a selector over everyone
		var out []string
		for _, p := range f.Participants {
			if p != cur || *sel.Selector.AllowRepeatSpeaker {
				out = append(out, p.Name)
			}
		}
		return out, nil
	}
	return f.follow(s)
}

// follow evaluates the edges from s.Sender.
func (f *Flow) follow(s State) ([]string, error) {
	vars := s.activation()
	var out []string
	var otherwise *Edge
	for _, e := range f.edges[s.Sender] {
		switch {
		case e.Otherwise:
			otherwise = e
			continue
		case e.prog != nil:
			ok, err := evalBool(e.prog, vars)
			if err != nil {
				return nil, fmt.Errorf("flow %s: edge %s → %s when %q: %w", f.Name, e.From, e.To, e.When, err)
			}
			if !ok {
				continue
			}
		}
		if !slices.Contains(out, e.To) {
			out = append(out, e.To)
		}
	}
	if len(out) == 0 && otherwise != nil {
		out = []string{otherwise.To}
	}
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("flow %s: after %s in round %d no edge holds: %w", f.Name, s.Sender, s.Round, ErrNoNextHop)
	case len(out) > 1 && f.Selection.Selector == nil:
		return nil, fmt.Errorf("flow %s: after %s in round %d the edges to %s all hold, and pure workflow mode needs exactly one: %w",
			f.Name, s.Sender, s.Round, strings.Join(out, ", "), ErrAmbiguousNextHop)
	}
	return out, nil
}

// ToolArguments evaluates the argument mapping of the tool agent name on s:
// the arguments its tool is called with.
func (f *Flow) ToolArguments(name string, s State) (map[string]any, error) {
	p, ok := f.byName[name]
	if !ok || p.Tool == "" {
		return nil, fmt.Errorf("flow %s: %q is not a tool agent", f.Name, name)
	}
	vars := s.activation()
	args := make(map[string]any, len(p.args))
	for _, arg := range sortedKeys(p.args) {
		v, err := evalJSON(p.args[arg], vars)
		if err != nil {
			return nil, fmt.Errorf("flow %s: %s argument %s = %q: %w", f.Name, name, arg, p.Arguments[arg], err)
		}
		args[arg] = v
	}
	return args, nil
}
