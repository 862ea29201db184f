// Package flow runs multi-agent conversations. A flow file names the
// participants (agent profiles, tool agents that answer by calling a
// hosted tool, and the human), how the next speaker is chosen (round-robin,
// an admin model's selector, or a workflow graph whose edges carry CEL
// conditions), when the run ends, what each participant is shown, and the
// stall guard. The [Engine] runs flows against a [Model] and the tool
// registry, and serves them over HTTP through [API].
//
// Loading validates everything a file can get wrong before any run starts
// and reports every problem at once, each with its path in the file:
// duplicate or unknown names, participants the graph cannot reach, and
// conditions that do not compile or are not boolean. CEL programs are
// compiled once at load and evaluated with a cost limit, so a condition can
// neither fail to parse in the middle of a run nor run away with the CPU.
//
// The engine keeps the rules of the durable run log (package runs): every
// step is an event, made durable before the run acts on it (a tool call
// before it is made, its result before the next model call), budgets are
// checked before every call, and every run ends with a stop reason. Each
// drive of a run starts by reading its log, so a first start, a wake-up by
// a human's message and a resume after a crash are one code path, and a
// call whose result is logged is never made again. A run waiting for a
// human holds no goroutine. docs/flows.md describes it all.
package flow
