package rpcplugin

import (
	"context"
	"errors"
	"net/rpc"

	"github.com/hashicorp/go-plugin"

	"github.com/skillhost/skillhost/internal/bench/tools"
)

// Name is the single plugin the process serves, as the SDK's.
const Name = "skill"

// Request is one call: a tool and its JSON arguments.
type Request struct {
	Tool      string
	Arguments []byte
}

// Response is the JSON result, or a tool's error message.
type Response struct {
	Result []byte
	Error  string
}

// Plugin joins the tools to go-plugin's net/rpc protocol. Serve it with
// plugin.Serve; the host's Dispense returns a *Client.
type Plugin struct{}

var _ plugin.Plugin = Plugin{}

// Server returns the net/rpc receiver go-plugin registers as "Plugin".
func (Plugin) Server(*plugin.MuxBroker) (any, error) { return &Server{}, nil }

// Client returns the host's stub.
func (Plugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (any, error) { return &Client{c: c}, nil }

// PluginSet is the plugin map both sides pass to go-plugin.
func PluginSet() plugin.PluginSet { return plugin.PluginSet{Name: Plugin{}} }

// Server is the skill side: it decodes, calls and encodes as the SDK's
// wrapper does (tools.Call).
type Server struct{}

// Invoke serves Plugin.Invoke. A tool's failure is an answer, not an RPC
// error, as in the gRPC protocol.
func (*Server) Invoke(req Request, resp *Response) error {
	res, err := tools.Call(context.Background(), req.Tool, req.Arguments)
	if err != nil {
		resp.Error = err.Error()
		return nil
	}
	resp.Result = res
	return nil
}

// Client is the host side. It is safe for concurrent use: net/rpc
// multiplexes calls on one stream.
type Client struct{ c *rpc.Client }

// Invoke calls tool with args and returns its JSON result. If ctx ends
// first the call is abandoned (net/rpc cannot cancel it on the far side).
func (c *Client) Invoke(ctx context.Context, tool string, args []byte) ([]byte, error) {
	var resp Response
	call := c.c.Go("Plugin.Invoke", Request{Tool: tool, Arguments: args}, &resp, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if call.Error != nil {
		return nil, call.Error
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return resp.Result, nil
}
