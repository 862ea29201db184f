package loader

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/registry"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// hostService answers the nested calls of one skill process (sdk.Call):
// the Host service of sdk/proto, which the instance serves over go-plugin's
// broker on the skill's own connection, only when the manifest declares
// "uses". A nested call names the running call it comes from by the token
// the host sent with that call; the token is looked up here, on this
// process's own service, so a skill can speak only for its own calls, and
// only while they run.
//
// The call then goes through the registry with the context of the call it
// comes from, and so under that call's scope (registry.InvokeAllowed):
// the permits of every caller up the chain (an MCP endpoint's filter, a
// read-only agent's), the remaining deadline, the depth limit and cycle
// detection, and the skill's "uses" for this call alone.
type hostService struct {
	skillpb.UnimplementedHostServer
	inst *instance
	reg  *registry.Registry

	mu    sync.Mutex // guards next and calls
	next  uint64
	calls map[uint64]context.Context // the contexts of the calls in flight, by token
}

func newHostService(inst *instance, reg *registry.Registry) *hostService {
	return &hostService{inst: inst, reg: reg, calls: map[uint64]context.Context{}}
}

// begin registers a call in flight, whose context ctx is (the registry's,
// carrying its scope), and returns its token and the func that ends it.
func (h *hostService) begin(ctx context.Context) (token uint64, end func()) {
	h.mu.Lock()
	h.next++
	token = h.next
	h.calls[token] = ctx
	h.mu.Unlock()
	return token, func() {
		h.mu.Lock()
		delete(h.calls, token)
		h.mu.Unlock()
	}
}

// CallTool runs one nested call. Every refusal and failure is a HostError
// with the registry's code, so the skill can tell forbidden from
// unknown_tool from a timeout; a gRPC status is left to the transport.
func (h *hostService) CallTool(gctx context.Context, req *skillpb.CallToolRequest) (*skillpb.CallToolResponse, error) {
	start := time.Now()
	inst := h.inst
	h.mu.Lock()
	parent, ok := h.calls[req.CallToken]
	h.mu.Unlock()
	if !ok {
		return errorResponse(registry.Errorf(registry.CodeBadRequest,
			"skill %s@%s called %s for call token %d, which names no call of it in flight (the call ended, or the token is not one the host sent)",
			inst.skill, inst.version, req.Tool, req.CallToken)), nil
	}
	caller := strings.Join(registry.CallChain(parent), " → ")
	// The nested call ends with the call it comes from (its deadline, the
	// host's cancellation) or when the skill stops waiting for it.
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	stop := context.AfterFunc(gctx, cancel)
	defer stop()
	res, err := h.reg.InvokeAllowed(ctx, req.Tool, req.Arguments, h.uses(caller))
	inst.log.Debug("nested call", "tool", req.Tool, "parent_call_id", registry.CallID(parent), "chain", caller,
		"code", registry.CodeOf(err), "duration", time.Since(start))
	if err != nil {
		return errorResponse(registry.AsError(err)), nil
	}
	return &skillpb.CallToolResponse{Result: res.Result}, nil
}

// uses is the manifest's uses as what the skill may call, for
// InvokeAllowed: it binds the skill's own calls, not the calls its callees
// make. caller names the call chain for the message.
func (h *hostService) uses(caller string) registry.Permit {
	m := h.inst.ver.Manifest
	return func(t *registry.Tool) error {
		if m.MayCall(t.Skill, t.LocalName()) {
			return nil
		}
		return registry.Errorf(registry.CodeForbidden,
			"skill %s (calling from %s) may not call %s: its manifest's uses does not list it (uses: %s)",
			h.inst.skill, caller, t.Name, strings.Join(m.Uses, ", ")).
			With("reason", "undeclared").With("caller", h.inst.skill).With("tool", t.Name).With("uses", m.Uses)
	}
}

func errorResponse(e *registry.Error) *skillpb.CallToolResponse {
	he := &skillpb.HostError{Code: string(e.Code), Message: e.Message, Retryable: e.Retryable}
	if len(e.Details) > 0 {
		he.Details, _ = json.Marshal(e.Details) // details are plain values; a failure only drops them
	}
	return &skillpb.CallToolResponse{Error: he}
}

// withBrokerServerAuth makes cfg, the host's TLS configuration for one skill
// process, fit for the broker's server side too: go-plugin serves the Host
// service with the client's configuration, which by itself would not ask
// the skill for a certificate. The skill must present the certificate the
// connection trusts as the skill's (RootCAs, read at each handshake since
// go-plugin replaces it with the one a skill that makes its own sends in
// its handshake line).
func withBrokerServerAuth(cfg *tls.Config) *tls.Config {
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := cfg.Clone()
		c.GetConfigForClient = nil
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = cfg.RootCAs
		return c, nil
	}
	return cfg
}
