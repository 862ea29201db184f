package runs

import (
	"errors"
	"fmt"
	"reflect"
	"time"
)

// Status is where a run stands, as its log says.
type Status string

// The statuses. A waiting run is only a state in its log: nothing runs
// for it until a HumanInput event is appended and its engine re-reads it.
const (
	StatusRunning Status = "running"
	StatusWaiting Status = "waiting_for_human"
	StatusStopped Status = "stopped"
)

// Tokens sums the Usage events of one participant.
type Tokens struct {
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Total      int64 `json:"total_tokens"`
	Calls      int   `json:"calls"`
}

// Turn is one transcript line: a Message, or a HumanInput shown as a
// message whose Role is "user".
type Turn struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Message
}

// State is a run folded from its events: what Summary shows and what an
// engine asks on resume. Build one with Apply, in seq order; the zero
// value is an empty run.
type State struct {
	Started    Started
	Status     Status
	Stop       *Stop             // set by the stop event
	Created    time.Time         // time of the first event
	Updated    time.Time         // time of the last event
	LastSeq    uint64            // seq of the last event applied
	Rounds     int               // speaker choices made
	Speaker    string            // the last chosen speaker
	Transcript []Turn            // messages and human input, in order
	Usage      map[string]Tokens // by participant
	Waiting    *HumanInputWait   // set while the run waits for a human

	calls     map[string]*callState // by call id
	callOrder []string
}

type callState struct {
	call   ToolCall
	result *ToolResult
}

// Apply folds one event into the state. Events must come in seq order
// with no gap. Kinds the state does not know (an extension's, or a
// built-in one from a newer version) only advance LastSeq, so a log stays
// readable by every package that shares it.
func (s *State) Apply(ev Event) error {
	var p Payload
	if !ev.Kind.Extension() {
		var err error
		if p, err = ev.Payload(); err != nil && builtin(ev.Kind) {
			return err
		}
	}
	return s.apply(ev, p)
}

func builtin(k Kind) bool {
	switch k {
	case KindStarted, KindMessage, KindSpeakerChoice, KindToolCall, KindToolResult, KindTransition,
		KindUsage, KindHumanInputWait, KindHumanInput, KindStop:
		return true
	}
	return false
}

// apply folds ev whose payload is already decoded (p may be nil for a
// kind the state does not know).
func (s *State) apply(ev Event, p Payload) error {
	if ev.Seq != s.LastSeq+1 {
		return fmt.Errorf("event seq %d after %d: events must come in order with no gap", ev.Seq, s.LastSeq)
	}
	if err := s.check(p); err != nil {
		return fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Kind, err)
	}
	if s.LastSeq == 0 {
		s.Created = ev.Time
		s.Status = StatusRunning
	}
	s.LastSeq = ev.Seq
	s.Updated = ev.Time
	switch p := p.(type) {
	case Started:
		s.Started = p
	case Message:
		s.Transcript = append(s.Transcript, Turn{Seq: ev.Seq, Time: ev.Time, Message: p})
	case HumanInput:
		sender := p.Sender
		if sender == "" {
			sender = "human"
		}
		s.Transcript = append(s.Transcript, Turn{Seq: ev.Seq, Time: ev.Time,
			Message: Message{Sender: sender, Role: "user", Content: p.Content}})
		s.Waiting = nil
		s.Status = StatusRunning
	case SpeakerChoice:
		s.Rounds++
		s.Speaker = p.Speaker
	case ToolCall:
		if s.calls == nil {
			s.calls = map[string]*callState{}
		}
		s.calls[p.CallID] = &callState{call: p}
		s.callOrder = append(s.callOrder, p.CallID)
	case ToolResult:
		s.calls[p.CallID].result = &p
	case Usage:
		if s.Usage == nil {
			s.Usage = map[string]Tokens{}
		}
		t := s.Usage[p.Participant]
		t.Prompt += p.PromptTokens
		t.Completion += p.CompletionTokens
		t.Total += p.PromptTokens + p.CompletionTokens
		t.Calls++
		s.Usage[p.Participant] = t
	case HumanInputWait:
		s.Waiting = &p
		s.Status = StatusWaiting
	case Stop:
		s.Stop = &p
		s.Waiting = nil
		s.Status = StatusStopped
	}
	return nil
}

// check says whether p may follow the events applied so far.
func (s *State) check(p Payload) error {
	return checkNext(p, s.Status, s.LastSeq, s.lookup)
}

// lookup reports whether callID is logged and whether it has a result.
func (s *State) lookup(callID string) (logged, answered bool) {
	c, ok := s.calls[callID]
	return ok, ok && c.result != nil
}

// checkBatch checks ps as if each were applied after the ones before it,
// without touching s: a batch is refused whole, before anything is written.
func (s *State) checkBatch(ps []Payload) error {
	status, seq := s.Status, s.LastSeq
	var batch map[string]bool // call id → answered, for calls and results earlier in this batch
	lookup := func(id string) (bool, bool) {
		if answered, ok := batch[id]; ok {
			return true, answered
		}
		return s.lookup(id)
	}
	for i, p := range ps {
		if err := checkNext(p, status, seq, lookup); err != nil {
			if len(ps) == 1 {
				return err
			}
			return fmt.Errorf("payload %d of %d (%s): %w", i+1, len(ps), p.Kind(), err)
		}
		seq++
		if status == "" {
			status = StatusRunning
		}
		switch p := p.(type) {
		case HumanInputWait:
			status = StatusWaiting
		case HumanInput:
			status = StatusRunning
		case Stop:
			status = StatusStopped
		case ToolCall, ToolResult:
			if batch == nil {
				batch = map[string]bool{}
			}
			if c, ok := p.(ToolCall); ok {
				batch[c.CallID] = false
			} else {
				batch[p.(ToolResult).CallID] = true
			}
		}
	}
	return nil
}

// checkNext holds the rules that keep a log meaningful on replay: whether
// p may follow a run with this status and last seq.
func checkNext(p Payload, status Status, lastSeq uint64, lookup func(callID string) (logged, answered bool)) error {
	if status == StatusStopped {
		return ErrStopped
	}
	if lastSeq == 0 {
		if _, ok := p.(Started); !ok {
			return errors.New("a run's first event must be started")
		}
	}
	switch p := p.(type) {
	case Started:
		if lastSeq != 0 {
			return errors.New("run already started")
		}
		if p.Type == "" {
			return errors.New("started: no type")
		}
	case Message:
		if p.Sender == "" {
			return errors.New("message: no sender")
		}
	case SpeakerChoice:
		if p.Speaker == "" {
			return errors.New("speaker_choice: no speaker")
		}
	case ToolCall:
		if p.CallID == "" || p.Tool == "" {
			return errors.New("tool_call: call_id and tool are required")
		}
		if logged, _ := lookup(p.CallID); logged {
			return fmt.Errorf("tool_call %q: %w", p.CallID, ErrDuplicateCall)
		}
	case ToolResult:
		logged, answered := lookup(p.CallID)
		if !logged {
			return fmt.Errorf("tool_result %q: %w", p.CallID, ErrUnknownCall)
		}
		if answered {
			return fmt.Errorf("tool_result %q: %w", p.CallID, ErrDuplicateResult)
		}
	case Usage:
		if p.Participant == "" || p.PromptTokens < 0 || p.CompletionTokens < 0 {
			return errors.New("usage: a participant and non-negative token counts are required")
		}
	case HumanInput:
		if status != StatusWaiting {
			return ErrNotWaiting
		}
	case Stop:
		if p.Reason == "" {
			return errors.New("stop: no reason; every run ends with a stop_reason")
		}
	}
	return nil
}

// Result returns the logged result of the tool call callID. A resumed
// engine asks this before making a call: a call with a result is never
// made again.
func (s *State) Result(callID string) (ToolResult, bool) {
	if c, ok := s.calls[callID]; ok && c.result != nil {
		return *c.result, true
	}
	return ToolResult{}, false
}

// Call returns the logged tool call callID.
func (s *State) Call(callID string) (ToolCall, bool) {
	if c, ok := s.calls[callID]; ok {
		return c.call, true
	}
	return ToolCall{}, false
}

// Pending lists the logged tool calls that have no result, in log order.
// After a crash these calls may or may not have run: the engine decides
// whether to make them again (safe for idempotent tools) or to log an
// error result.
func (s *State) Pending() []ToolCall {
	var out []ToolCall
	for _, id := range s.callOrder {
		if c := s.calls[id]; c.result == nil {
			out = append(out, c.call)
		}
	}
	return out
}

// payloadValue turns a pointer to a payload struct into the struct, so
// that Append(&runs.Message{...}) and Append(runs.Message{...}) are
// checked and folded alike. A nil payload, or a nil pointer (whose Kind
// method would panic), is an error.
func payloadValue(p Payload) (Payload, error) {
	if p == nil {
		return nil, errors.New("payload is nil")
	}
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer {
		return p, nil
	}
	if v.IsNil() {
		return nil, fmt.Errorf("payload is a nil %T", p)
	}
	if e, ok := v.Elem().Interface().(Payload); ok {
		return e, nil
	}
	return p, nil
}

// Summary is what GET /v1/runs/{id} shows of a run.
type Summary struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Name       string            `json:"name,omitempty"`
	Status     Status            `json:"status"`
	StopReason string            `json:"stop_reason,omitempty"`
	StopDetail string            `json:"stop_detail,omitempty"`
	Created    time.Time         `json:"created"`
	Updated    time.Time         `json:"updated"`
	LastSeq    uint64            `json:"last_seq"`
	Rounds     int               `json:"rounds"`
	Speaker    string            `json:"speaker,omitempty"`
	Waiting    *HumanInputWait   `json:"waiting,omitempty"`
	Usage      map[string]Tokens `json:"usage"`
	Transcript []Turn            `json:"transcript,omitempty"`
}

func (s *State) summary(id string, transcript bool) Summary {
	sum := Summary{
		ID: id, Type: s.Started.Type, Name: s.Started.Name, Status: s.Status,
		Created: s.Created, Updated: s.Updated, LastSeq: s.LastSeq, Rounds: s.Rounds, Speaker: s.Speaker,
		Usage: make(map[string]Tokens, len(s.Usage)),
	}
	if s.Stop != nil {
		sum.StopReason, sum.StopDetail = s.Stop.Reason, s.Stop.Detail
	}
	if s.Waiting != nil {
		w := *s.Waiting
		sum.Waiting = &w
	}
	for k, v := range s.Usage {
		sum.Usage[k] = v
	}
	if transcript {
		sum.Transcript = append([]Turn(nil), s.Transcript...)
	}
	return sum
}
