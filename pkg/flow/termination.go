package flow

import (
	"strings"
	"time"
)

// Condition is a termination condition: exactly one of its fields is set.
// Any and All compose others; a run stops when the flow's condition is met.
type Condition struct {
	Any []*Condition `json:"any,omitempty"` // met when one of these is
	All []*Condition `json:"all,omitempty"` // met when every one of these is

	MaxRounds   int    `json:"max_rounds,omitempty"`   // the run has taken this many turns
	TextMention string `json:"text_mention,omitempty"` // the last message contains this text, e.g. TERMINATE
	// TerminateTool is met when a participant calls the terminate tool,
	// which the run then offers to agent participants.
	TerminateTool  bool     `json:"terminate_tool,omitempty"`
	TokenBudget    int      `json:"token_budget,omitempty"`     // the run has used this many tokens
	TimeLimit      Duration `json:"time_limit,omitempty"`       // the run has lasted this long
	HandoffToHuman bool     `json:"handoff_to_human,omitempty"` // the next turn is the human's
}

// Stop reasons of the conditions, as [Flow.ShouldStop] reports them. The
// run engine adds its own (stopped, stalled, selector_failed, reply_failed,
// no_next_hop).
const (
	ReasonMaxRounds      = "max_rounds"
	ReasonTextMention    = "text_mention"
	ReasonTerminateTool  = "terminate_tool"
	ReasonTokenBudget    = "token_budget"
	ReasonTimeLimit      = "time_limit"
	ReasonHandoffToHuman = "handoff_to_human"
)

// kinds lists the fields of c that are set, by their file names.
func (c *Condition) kinds() []string {
	var set []string
	for _, k := range []struct {
		name string
		on   bool
	}{
		{"any", c.Any != nil}, {"all", c.All != nil},
		{ReasonMaxRounds, c.MaxRounds != 0}, {ReasonTextMention, c.TextMention != ""},
		{ReasonTerminateTool, c.TerminateTool}, {ReasonTokenBudget, c.TokenBudget != 0},
		{ReasonTimeLimit, c.TimeLimit != 0}, {ReasonHandoffToHuman, c.HandoffToHuman},
	} {
		if k.on {
			set = append(set, k.name)
		}
	}
	return set
}

// hasMaxRounds reports whether a max_rounds leaf caps the run whatever else
// happens: at the top, or under an any.
func (c *Condition) hasMaxRounds() bool {
	if c.MaxRounds > 0 {
		return true
	}
	for _, sub := range c.Any {
		if sub != nil && sub.hasMaxRounds() {
			return true
		}
	}
	return false
}

// ShouldStop evaluates the flow's termination condition on s and returns
// the stop reason when it is met. For all, the reason names every part,
// joined by "+".
func (f *Flow) ShouldStop(s State) (reason string, stop bool) {
	return f.met(f.Termination, s)
}

func (f *Flow) met(c *Condition, s State) (string, bool) {
	switch {
	case c == nil:
		return "", false
	case c.Any != nil:
		for _, sub := range c.Any {
			if r, ok := f.met(sub, s); ok {
				return r, true
			}
		}
		return "", false
	case c.All != nil:
		var reasons []string
		for _, sub := range c.All {
			r, ok := f.met(sub, s)
			if !ok {
				return "", false
			}
			reasons = append(reasons, r)
		}
		return strings.Join(reasons, "+"), len(reasons) > 0
	case c.MaxRounds > 0:
		return ReasonMaxRounds, s.Round >= c.MaxRounds
	case c.TextMention != "":
		return ReasonTextMention, strings.Contains(s.Text, c.TextMention)
	case c.TerminateTool:
		return ReasonTerminateTool, s.TerminateCalled
	case c.TokenBudget > 0:
		return ReasonTokenBudget, s.Tokens >= c.TokenBudget
	case c.TimeLimit > 0:
		return ReasonTimeLimit, s.Elapsed >= time.Duration(c.TimeLimit)
	case c.HandoffToHuman:
		h := f.Human()
		return ReasonHandoffToHuman, h != "" && s.Next == h
	}
	return "", false
}

// String is the duration as Go writes it.
func (d Duration) String() string { return time.Duration(d).String() }
