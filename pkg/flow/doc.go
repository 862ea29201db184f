// Package flow is the configuration side of multi-agent runs: the flow file
// that names a conversation's participants (agent profiles, tool agents
// that answer by calling a hosted tool, and the human), how the next
// speaker is chosen (round-robin, an admin model's selector, or a workflow
// graph whose edges carry CEL conditions), when the run ends, what each
// participant sees of the conversation, and the stall guard.
//
// Loading validates everything a file can get wrong before any run starts
// and reports every problem at once, each with its path in the file:
// duplicate or unknown names, participants the graph cannot reach, and
// conditions that do not compile or are not boolean. CEL programs are
// compiled once at load and evaluated with a cost limit, so a condition can
// neither fail to parse in the middle of a run nor run away with the CPU.
//
// The run engine (package runs) consumes a [Flow]: it asks
// [Flow.NextCandidates] who may speak next, [Flow.ToolArguments] what a tool
// agent sends, [Flow.ShouldStop] whether to end, and [ContextPolicy.Select]
// what a participant is shown. This package holds no goroutines and does no
// I/O beyond reading flow files.
package flow
