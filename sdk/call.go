package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// CallError is the host's answer to a nested call it refused or that
// failed: the host's error code ("forbidden", "unknown_tool",
// "invalid_arguments", "tool_error", "timeout", ...) and message, as any
// other caller of the host would see them. Test for a code with [IsCode].
type CallError struct {
	Tool      string // the tool that was called
	Code      string
	Message   string
	Retryable bool
	Details   map[string]any
}

func (e *CallError) Error() string {
	return fmt.Sprintf("calling %s: %s: %s", e.Tool, e.Code, e.Message)
}

// The codes the SDK itself answers a nested call with, before it reaches
// the host. Every other code comes from the host (docs/api.md lists them).
const (
	// CodeNoHost: ctx is not a handler's context from a host that serves
	// nested calls to this skill: a context.Background, a test calling the
	// handler directly, or a skill whose manifest declares no "uses".
	CodeNoHost = "no_host"
	// CodeHostUnreachable: the host's service could not be reached or
	// broke off; the host is usually going away.
	CodeHostUnreachable = "host_unreachable"
)

// IsCode reports whether err is a [*CallError] or an [*Error] with code.
// A handler that returns a *CallError as it is hands the callee's code on to
// its own caller as a tool error.
func IsCode(err error, code string) bool {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Code == code
	}
	var te *Error
	return errors.As(err, &te) && te.Code == code
}

// Call calls another hosted tool ("skill.tool") from inside a handler and
// returns its JSON result. ctx must be the handler's context (or one derived
// from it): it names the running call to the host, which runs the nested
// call under that call's scope: only tools the skill's manifest lists in
// "uses", only those its own caller may reach (a read-only agent's skill
// cannot reach a write tool), within the time the call has left, at most a
// few calls deep and never back into a tool already on the chain. args is
// a json.RawMessage, []byte of JSON, or any value that encodes to a JSON
// object; nil sends {}.
//
// Every failure is a *CallError with the host's code (see [IsCode]).
func Call(ctx context.Context, tool string, args any) (json.RawMessage, error) {
	raw, err := encodeArgs(args)
	if err != nil {
		return nil, &CallError{Tool: tool, Code: "invalid_arguments", Message: err.Error()}
	}
	c, _ := ctx.Value(callKey{}).(*callInfo)
	if c != nil && c.caller != nil {
		return c.caller(ctx, tool, raw)
	}
	if c == nil || c.token == 0 || c.broker == 0 || c.host == nil {
		return nil, &CallError{Tool: tool, Code: CodeNoHost, Message: "no host to call through: ctx must be a tool handler's context (or derived from one), " +
			"and the host serves nested calls only to a skill whose manifest declares the tools it calls in \"uses\""}
	}
	client, err := c.host.client(c.broker)
	if err != nil {
		return nil, &CallError{Tool: tool, Code: CodeHostUnreachable, Message: err.Error(), Retryable: true}
	}
	resp, err := client.CallTool(ctx, &skillpb.CallToolRequest{CallToken: c.token, Tool: tool, Arguments: raw})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// The call's own end (the host's cancellation or deadline):
			// the handler should stop as it would for any ctx error.
			return nil, fmt.Errorf("calling %s: %w", tool, cerr)
		}
		return nil, &CallError{Tool: tool, Code: CodeHostUnreachable, Message: err.Error(), Retryable: true}
	}
	if e := resp.Error; e != nil {
		ce := &CallError{Tool: tool, Code: e.Code, Message: e.Message, Retryable: e.Retryable}
		if len(e.Details) > 0 {
			_ = json.Unmarshal(e.Details, &ce.Details) // details are informative: a bad one is dropped
		}
		return nil, ce
	}
	return resp.Result, nil
}

// CallAs is [Call] with a typed result: Out is decoded from the result with
// encoding/json. in is encoded as Call's args.
func CallAs[Out any](ctx context.Context, tool string, in any) (Out, error) {
	var out Out
	raw, err := Call(ctx, tool, in)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, &CallError{Tool: tool, Code: "invalid_response", Message: fmt.Sprintf("the result does not decode into %T: %v", out, err)}
	}
	return out, nil
}

// CallFunc answers nested calls in place of the host; see [WithCaller].
type CallFunc func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)

// WithCaller returns ctx with f answering the [Call]s made with it: a unit
// test of a handler that calls other tools hands it fakes this way, with no
// host and no process. A handler's context from the host replaces it.
func WithCaller(ctx context.Context, f CallFunc) context.Context {
	return context.WithValue(ctx, callKey{}, &callInfo{caller: f})
}

// CallID is the host's id of the call whose handler ctx belongs to (the
// parent_call_id of the nested calls it makes, in the host's logs), or "".
func CallID(ctx context.Context) string {
	if c, _ := ctx.Value(callKey{}).(*callInfo); c != nil {
		return c.id
	}
	return ""
}

func encodeArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments do not encode as JSON: %w", err)
	}
	return b, nil
}

type callKey struct{}

// callInfo is what a handler's ctx carries for Call: which running call it
// is (token, for the host; id, for logs) and how to reach the host.
type callInfo struct {
	token  uint64
	id     string
	broker uint32
	host   *hostConn
	caller CallFunc // set by WithCaller only
}

// hostConn dials the host's Host service over go-plugin's broker once, on
// the first nested call, and keeps the connection for the process's life:
// a skill that never calls out never dials.
type hostConn struct {
	mu     sync.Mutex // guards the fields below
	broker *plugin.GRPCBroker
	id     uint32
	conn   *grpc.ClientConn
	stub   skillpb.HostClient
}

func (h *hostConn) setBroker(b *plugin.GRPCBroker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broker = b
}

// client returns the Host stub for broker id. The host serves one Host
// service per process, so the id does not change; a different one (a host
// that re-served it) gets a new connection.
func (h *hostConn) client(id uint32) (skillpb.HostClient, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stub != nil && h.id == id {
		return h.stub, nil
	}
	if h.broker == nil {
		return nil, errors.New("the host's broker is not set up (the skill is not served through go-plugin)")
	}
	// Dialling under h.mu makes concurrent first calls share one
	// connection; the broker's knock is a round trip over a connection
	// already up.
	opts := append(DialOptions(), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(Codec),
		grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)))
	conn, err := h.broker.DialWithOptions(id, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial the host's service (broker id %d): %w", id, err)
	}
	if h.conn != nil {
		h.conn.Close()
	}
	h.conn, h.id, h.stub = conn, id, skillpb.NewHostClient(conn)
	return h.stub, nil
}
