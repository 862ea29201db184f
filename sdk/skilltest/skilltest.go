package skilltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// Client calls a running skill the way the host does.
type Client struct {
	rpc skillpb.SkillClient
}

// ToolError is a tool's refusal, as the host receives it.
type ToolError struct {
	Code      string
	Message   string
	Retryable bool
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// Describe returns the skill's description of itself and its tools.
func (c *Client) Describe(ctx context.Context) (*skillpb.DescribeResponse, error) {
	return c.rpc.Describe(ctx, &skillpb.DescribeRequest{})
}

// Call invokes tool with args encoded as JSON (a []byte or json.RawMessage is
// sent as is). A tool's refusal is returned as *ToolError; transport failures
// as gRPC errors.
func (c *Client) Call(ctx context.Context, tool string, args any) (json.RawMessage, error) {
	var raw []byte
	switch a := args.(type) {
	case []byte:
		raw = a
	case json.RawMessage:
		raw = a
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		raw = b
	}
	resp, err := c.rpc.Invoke(ctx, &skillpb.InvokeRequest{Tool: tool, Arguments: raw})
	if err != nil {
		return nil, err
	}
	if e := resp.Error; e != nil {
		return nil, &ToolError{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
	}
	return resp.Result, nil
}

// callOptions are the host's: the skill protocol's codec, and message caps
// that leave sizes to the skill (the host sizes them from the manifest).
func callOptions() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.ForceCodecV2(sdk.Codec),
		grpc.MaxCallRecvMsgSize(sdk.MaxMessageBytes), grpc.MaxCallSendMsgSize(sdk.MaxMessageBytes))
}

func dial(t testing.TB, cfg *plugin.ClientConfig) *Client {
	t.Helper()
	cfg.HandshakeConfig = sdk.Handshake
	cfg.Plugins = sdk.PluginSet(nil)
	cfg.AllowedProtocols = []plugin.Protocol{plugin.ProtocolGRPC}
	cfg.GRPCDialOptions = append(sdk.DialOptions(), callOptions())
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "skilltest", Level: hclog.Warn, Output: os.Stderr})
	}
	pc := plugin.NewClient(cfg)
	t.Cleanup(pc.Kill)
	proto, err := pc.Client()
	if err != nil {
		t.Fatalf("skilltest: connect to skill: %v", err)
	}
	raw, err := proto.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatalf("skilltest: dispense: %v", err)
	}
	return &Client{rpc: raw.(skillpb.SkillClient)}
}

// Start serves s inside the test process over real gRPC and returns a
// client. The server is the one Serve builds (sdk.GRPCServerFactory, the
// skill's go-plugin registration) and the client has the host's transport
// settings, over a local socket; go-plugin's handshake and process
// management are left out (Exec has them). When the test ends Start closes
// the connection, stops the server and waits for it.
//
// Start does not use go-plugin's own test mode (plugin.ServeTestConfig):
// its Serve makes two pipes for the plugin's stdio, and two goroutines
// reading them, that only the garbage collector ends, and its reattaching
// client watches the test's own pid for ever.
func Start(t testing.TB, s *sdk.Skill) *Client {
	t.Helper()
	lis, err := listen()
	if err != nil {
		t.Fatalf("skilltest: listen: %v", err)
	}
	p := sdk.PluginSet(s.Server(nil))[sdk.PluginName].(plugin.GRPCPlugin)
	srv := sdk.GRPCServerFactory(nil)
	if err := p.GRPCServer(nil, srv); err != nil {
		lis.Close()
		t.Fatalf("skilltest: register the skill: %v", err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis) // returns when Stop closes lis
	}()
	t.Cleanup(func() {
		srv.Stop() // closes the listener and every connection; removes the socket
		<-served
	})
	cc, err := grpc.NewClient(lis.Addr().Network()+"://"+lis.Addr().String(),
		append(sdk.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), callOptions())...)
	if err != nil {
		t.Fatalf("skilltest: dial the skill: %v", err)
	}
	t.Cleanup(func() { cc.Close() }) // before the server stops
	raw, err := p.GRPCClient(context.Background(), nil, cc)
	if err != nil {
		t.Fatalf("skilltest: client: %v", err)
	}
	return &Client{rpc: raw.(skillpb.SkillClient)}
}

// listen opens the skill's socket: a unix socket, as go-plugin uses, in a
// folder of its own (short enough for a socket path, unlike t.TempDir's
// folders, which are named after the test), removed when the listener
// closes; TCP on loopback where there are no unix sockets.
func listen() (net.Listener, error) {
	if runtime.GOOS == "windows" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	dir, err := os.MkdirTemp("", "skilltest")
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "skill.sock"))
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return dirListener{lis, dir}, nil
}

// dirListener removes its socket's folder when it closes.
type dirListener struct {
	net.Listener
	dir string
}

func (l dirListener) Close() error {
	err := l.Listener.Close() // removes the socket
	os.RemoveAll(l.dir)
	return err
}

// Exec starts the skill binary at path as a subprocess, with an empty
// environment as skillhost gives it, and returns a client. The process is
// killed when the test ends. The connection is go-plugin's plain AutoMTLS:
// the skill makes its own TLS key, as it does when a host hands it none
// (skillhost hands it one; see sdk.ServerTLSFDEnv).
func Exec(t testing.TB, path string) *Client {
	t.Helper()
	cmd := exec.Command(path)
	cmd.Env = []string{}
	return dial(t, &plugin.ClientConfig{Cmd: cmd, SkipHostEnv: true, AutoMTLS: true, StartTimeout: 20 * time.Second})
}

// Manifest runs the skill binary at path with --manifest, as
// scripts/build-skills.sh does, and returns the skeleton it prints. Output
// that is not exactly one skeleton fails the test.
func Manifest(t testing.TB, path string) sdk.ManifestSkeleton {
	t.Helper()
	out, err := exec.Command(path, "--manifest").Output()
	if err != nil {
		t.Fatalf("skilltest: %s --manifest: %v", path, err)
	}
	var m sdk.ManifestSkeleton
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() {
		t.Fatalf("skilltest: %s --manifest printed %q, not one manifest skeleton: %v", path, out, err)
	}
	return m
}

// Build compiles the main package pkg (an import path or a ./relative
// directory, resolved from the test's working directory) into the test's temp
// folder and returns the binary's path.
func Build(t testing.TB, pkg string, ldflags ...string) string {
	t.Helper()
	name := filepath.Base(pkg)
	if abs, err := filepath.Abs(pkg); err == nil && (strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg)) {
		name = filepath.Base(abs) // "." names the binary after its folder
	}
	out := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skilltest: go build %s: %v", pkg, err)
	}
	return out
}
