package sdk

import (
	"context"
	"runtime"
	"sync/atomic"

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

// The flow-control windows of a skill connection, the same on both ends.
// Fixed windows turn off gRPC's bandwidth-delay estimator, which otherwise
// answers nearly every message with a PING (and a WINDOW_UPDATE) that the
// other process must wake up to acknowledge: on a pipe-like local socket
// that is two more process wake-ups per call, for a bandwidth the kernel
// already provides. Measured side by side on 2 cores: serial echo 162 →
// 150 µs bare and 471 → 433 µs through the daemon's HTTP API; a 64 KiB
// result at 64 callers 2.97k → 4.63k calls/s (docs/performance.md). A
// window is credit, not a buffer: memory is spent only on data that
// arrives, which the host reads at once and caps per call
// (max_response_bytes). The stream window holds a 4 MiB result, the
// default cap, without a window update; the connection window is what the
// estimator would grow to at most (16 MiB).
const (
	StreamWindowBytes = 4 << 20
	ConnWindowBytes   = 16 << 20
)

// DialOptions are the host's side of the skill connection's transport
// settings (the fixed windows); the host adds its call options (the codec,
// the manifest's limits).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(StreamWindowBytes), grpc.WithStaticConnWindowSize(ConnWindowBytes)}
}

// GRPCPlugin joins the skill protocol to go-plugin. On the skill side Impl is
// the server; on the host side GRPCClient returns a skillpb.SkillClient and,
// when Host is set, serves Host to the skill over go-plugin's broker.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl skillpb.SkillServer

	// Host, on the host's side, is the service that answers the skill's
	// nested calls (Call). GRPCClient serves it over the broker, which ends
	// it when the client is killed; nil serves nothing. A plugin with Host
	// set belongs to one client.
	Host skillpb.HostServer

	hostID atomic.Uint32 // the broker id Host is served on, once GRPCClient ran
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server and hands it the
// broker, through which Call reaches the host.
func (p *GRPCPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	skillpb.RegisterSkillServer(s, p.Impl)
	if sv, ok := p.Impl.(*server); ok {
		sv.host.setBroker(b)
	}
	return nil
}

// GRPCClient returns the host's stub for the skill. With Host set it also
// serves Host on a new broker id (HostBrokerID) until the broker closes.
// The host must send that id with each call (InvokeRequest.host_broker_id).
func (p *GRPCPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	if p.Host != nil {
		id := b.NextId()
		p.hostID.Store(id)
		// AcceptAndServe returns when the broker closes, which go-plugin
		// does when the client is killed.
		go b.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
			// The skill connection's settings (see GRPCServerFactory): a
			// nested call is on the path of its parent's latency.
			opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes), grpc.ForceServerCodecV2(Codec),
				grpc.StaticStreamWindowSize(StreamWindowBytes), grpc.StaticConnWindowSize(ConnWindowBytes))
			s := grpc.NewServer(opts...)
			skillpb.RegisterHostServer(s, p.Host)
			return s
		})
	}
	return skillpb.NewSkillClient(c), nil
}

// HostBrokerID is the broker id on which GRPCClient serves Host, or 0.
func (p *GRPCPlugin) HostBrokerID() uint32 { return p.hostID.Load() }

// PluginSet is the plugin map both sides pass to go-plugin.
func PluginSet(impl skillpb.SkillServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCServerFactory builds the skill's gRPC server with raised message caps,
// the skill protocol's Codec, the fixed flow-control windows (see
// StreamWindowBytes) and a pool of stream workers.
//
// Without the pool gRPC serves every call on a new goroutine, whose small
// first stack grows (runtime.newstack copying it) on each call's way through
// the transport and the handler: a fifth of a skill's CPU on small calls
// (golang/go#18138). Workers keep their grown stacks, and gRPC replaces each
// after 65,536 calls so one deep call does not pin a large stack. When every
// worker is busy (slow tools, many callers) a call gets its own goroutine as
// before, so the pool never queues a call. grpc-go marks NumStreamWorkers
// experimental; it has been there since v1.30.
func GRPCServerFactory(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes), grpc.ForceServerCodecV2(Codec),
		grpc.NumStreamWorkers(streamWorkers()), grpc.StaticStreamWindowSize(StreamWindowBytes), grpc.StaticConnWindowSize(ConnWindowBytes))
	return grpc.NewServer(opts...)
}

// streamWorkers sizes the pool for the host's usual concurrency: with 8
// workers most calls at 64 callers still spilled to new goroutines. An idle
// worker is a parked goroutine; GC shrinks its stack.
func streamWorkers() uint32 { return uint32(max(64, 4*runtime.GOMAXPROCS(0))) }
