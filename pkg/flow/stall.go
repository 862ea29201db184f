package flow

// Turn is what the stall guard remembers of one turn.
type Turn struct {
	Speaker string
	Text    string
	// Tool and Arguments describe the tool call the turn made, if any:
	// the qualified tool name and its arguments in a canonical form (for
	// JSON, as encoding/json marshals a decoded value: keys sorted).
	Tool      string
	Arguments string
}

// Stall reasons, as [StallGuard.Check] reports them.
const (
	StallRepeatedCall    = "repeated_tool_call"
	StallRepeatedMessage = "repeated_message"
)

// Check reports whether the newest turn of turns (oldest first) repeats one
// of the Window-1 turns before it: the same speaker calling the same tool
// with the same arguments, or the same non-empty message from anyone. A nil
// guard never stalls.
func (g *StallGuard) Check(turns []Turn) (reason string, stalled bool) {
	if g == nil || len(turns) < 2 {
		return "", false
	}
	last := turns[len(turns)-1]
	for i := len(turns) - 2; i >= 0 && i >= len(turns)-g.Window; i-- {
		t := turns[i]
		switch {
		case last.Tool != "" && t.Speaker == last.Speaker && t.Tool == last.Tool && t.Arguments == last.Arguments:
			return StallRepeatedCall, true
		case last.Text != "" && t.Text == last.Text:
			return StallRepeatedMessage, true
		}
	}
	return "", false
}
