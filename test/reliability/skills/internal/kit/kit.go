package kit

import (
	"context"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// Name and Version are the skill's identity, from TESTSKILL_NAME and
// TESTSKILL_VERSION (testenv.Version.Manifest writes both).
func Name() string    { return EnvOr("TESTSKILL_NAME", "hostile") }
func Version() string { return EnvOr("TESTSKILL_VERSION", "1.0.0") }

// EnvOr returns the variable k, or def when it is unset or empty.
func EnvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// ServeRaw serves impl over go-plugin exactly as the SDK would, minus the
// SDK's safety nets (no SIGTERM handler, no parent watch).
func ServeRaw(impl skillpb.SkillServer) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         sdk.PluginSet(impl),
		GRPCServer:      sdk.GRPCServerFactory,
	})
}

// ObjectSchema is the smallest input schema the host accepts.
var ObjectSchema = []byte(`{"type":"object"}`)

// Echo is a well-behaved tool for raw servers, so a test can tell "the
// skill serves" from "the skill is refused".
func Echo(context.Context, *skillpb.InvokeRequest) (*skillpb.InvokeResponse, error) {
	return &skillpb.InvokeResponse{Result: []byte(`{"ok":true,"pid":` + itoa(os.Getpid()) + `}`)}, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// EchoServer is a minimal, well-behaved raw skill with one tool, "echo".
type EchoServer struct {
	skillpb.UnimplementedSkillServer
}

func (EchoServer) Describe(context.Context, *skillpb.DescribeRequest) (*skillpb.DescribeResponse, error) {
	return &skillpb.DescribeResponse{Name: Name(), Version: Version(), Description: "A raw echo skill.",
		Tools: []*skillpb.Tool{{Name: "echo", Description: "Answer with the pid.", InputSchema: ObjectSchema}}}, nil
}

func (EchoServer) Invoke(ctx context.Context, r *skillpb.InvokeRequest) (*skillpb.InvokeResponse, error) {
	return Echo(ctx, r)
}
