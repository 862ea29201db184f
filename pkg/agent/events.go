package agent

// EventType names an event of a run, and the SSE event it is sent as.
type EventType string

// The events of a run, in the order they can occur.
const (
	// EventStart: a session (the run, or a sub-agent) begins; Tools are
	// the tools it offers its model.
	EventStart EventType = "start"
	// EventDelta: text the model streamed.
	EventDelta EventType = "delta"
	// EventToolCallStarted: a tool call begins; Call holds its name and
	// arguments.
	EventToolCallStarted EventType = "tool_call_started"
	// EventToolCallFinished: it ended; Call holds ok, error, summary and
	// duration.
	EventToolCallFinished EventType = "tool_call_finished"
	// EventNotice: something the caller should know (a retry, the
	// fallback to a plain answer, the step limit).
	EventNotice EventType = "notice"
	// EventToolsAdded: activate_skill or search_tools added Tools to the session's tool
	// set; they are sent from the next request on.
	EventToolsAdded EventType = "tools_added"
	// EventDone and EventError end an SSE stream: the Response, or the
	// error in the one error shape. Run does not emit them; the handler
	// writes them from Run's result.
	EventDone  EventType = "done"
	EventError EventType = "error"
)

// Event is one thing that happened in a run. Events of a sub-agent carry
// its Depth (> 0) and Parent, the id of the delegate call that started it.
type Event struct {
	Type    EventType `json:"type"`
	Profile string    `json:"profile"`
	Depth   int       `json:"depth"`
	Parent  string    `json:"parent,omitempty"`
	Step    int       `json:"step,omitempty"`
	Model   string    `json:"model,omitempty"`   // start
	Tools   []string  `json:"tools,omitempty"`   // start
	Delta   string    `json:"delta,omitempty"`   // delta
	Call    *ToolCall `json:"call,omitempty"`    // tool_call_*
	Message string    `json:"message,omitempty"` // notice
}
