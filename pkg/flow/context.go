package flow

import "slices"

// Keep names a context policy.
type Keep string

const (
	KeepAll     Keep = "all"     // the whole conversation (the default)
	KeepLastN   Keep = "last_n"  // the last Last messages
	KeepSenders Keep = "senders" // only messages from Senders (the last Last of them, when Last is set)
	// KeepClear shows only the message that hands over the turn: the
	// participant starts each turn from its system prompt and that message,
	// as AutoGen's CLEAR_MESSAGES does.
	KeepClear Keep = "clear"
)

// ContextPolicy is what a participant is shown of the conversation, so its
// context does not grow without bound.
type ContextPolicy struct {
	Keep    Keep     `json:"keep,omitempty"`
	Last    int      `json:"last,omitempty"`
	Senders []string `json:"senders,omitempty"`
}

// Select returns the indexes, in order, of the messages a participant is
// shown, given each message's sender in conversation order.
func (c ContextPolicy) Select(senders []string) []int {
	var idx []int
	switch c.Keep {
	case KeepLastN:
		for i := max(0, len(senders)-c.Last); i < len(senders); i++ {
			idx = append(idx, i)
		}
		return idx
	case KeepClear:
		if len(senders) > 0 {
			idx = append(idx, len(senders)-1)
		}
		return idx
	case KeepSenders:
		for i, s := range senders {
			if slices.Contains(c.Senders, s) {
				idx = append(idx, i)
			}
		}
		if c.Last > 0 && len(idx) > c.Last {
			idx = idx[len(idx)-c.Last:]
		}
		return idx
	default: // all
		for i := range senders {
			idx = append(idx, i)
		}
		return idx
	}
}
