package skilltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

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

func dial(t testing.TB, cfg *plugin.ClientConfig) *Client {
	t.Helper()
	cfg.HandshakeConfig = sdk.Handshake
	cfg.Plugins = sdk.PluginSet(nil)
	cfg.AllowedProtocols = []plugin.Protocol{plugin.ProtocolGRPC}
	cfg.GRPCDialOptions = append(sdk.DialOptions(), grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(sdk.MaxMessageBytes), grpc.MaxCallSendMsgSize(sdk.MaxMessageBytes)))
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

// Start serves s inside the test process over real gRPC and returns a client.
// The server stops when the test ends.
func Start(t testing.TB, s *sdk.Skill) *Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	go plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         sdk.PluginSet(s.Server(nil)),
		GRPCServer:      sdk.GRPCServerFactory,
		Logger:          hclog.NewNullLogger(),
		Test:            &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed},
	})
	t.Cleanup(func() {
		cancel()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Errorf("skilltest: in-process skill did not stop")
		}
	})
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(10 * time.Second):
		t.Fatal("skilltest: in-process skill did not start")
	}
	return dial(t, &plugin.ClientConfig{Reattach: rc})
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
