package sdk

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// Handshake is the go-plugin handshake shared by the host and every skill.
// The cookie is not a security measure; it stops a user from running a skill
// binary by hand and wondering why it prints a protocol line.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "SKILLHOST_SKILL",
	MagicCookieValue: "8c4f3f0e-skillhost-skill-v1",
}

// PluginName is the single plugin a skill process serves.
const PluginName = "skill"

// MaxMessageBytes is the gRPC message cap on the skill side. It is far above
// go-plugin's 4 MiB default so that the host, which knows each manifest's
// limits, is the one place that enforces request and response sizes.
const MaxMessageBytes = 256 << 20

// GRPCPlugin joins the skill protocol to go-plugin. On the skill side Impl is
// the server; on the host side GRPCClient returns a skillpb.SkillClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl skillpb.SkillServer
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	skillpb.RegisterSkillServer(s, p.Impl)
	return nil
}

// GRPCClient returns the host's stub for the skill.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return skillpb.NewSkillClient(c), nil
}

// PluginSet is the plugin map both sides pass to go-plugin.
func PluginSet(impl skillpb.SkillServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCServerFactory builds the skill's gRPC server with raised message caps
// and the skill protocol's Codec.
func GRPCServerFactory(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes), grpc.ForceServerCodecV2(Codec))
	return grpc.NewServer(opts...)
}
