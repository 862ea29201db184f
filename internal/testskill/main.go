package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

type echoIn struct {
	Msg string `json:"msg,omitempty" jsonschema:"description=text to echo back"`
}

type echoOut struct {
	Version string `json:"version"`
	Msg     string `json:"msg"`
	PID     int    `json:"pid"`
}

type sleepIn struct {
	MS     int  `json:"ms" jsonschema:"minimum=0"`
	Ignore bool `json:"ignore_cancel,omitempty" jsonschema:"description=keep sleeping after cancellation"`
}

type relayIn struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
}

type relayOut struct {
	Version string          `json:"version"`
	CallID  string          `json:"call_id"`
	Result  json.RawMessage `json:"result"`
}

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"minimum=0"`
}

func main() {
	name := envOr("TESTSKILL_NAME", "echo")
	version := envOr("TESTSKILL_VERSION", "1.0.0")
	switch os.Getenv("TESTSKILL_MODE") {
	case "exit":
		fmt.Fprintln(os.Stderr, "testskill: exiting at start as asked")
		os.Exit(1)
	case "nohandshake":
		time.Sleep(time.Hour)
	case "garbage":
		fmt.Println("this is not a go-plugin handshake line")
	case "badschema":
		serveRaw(name, version)
		return
	case "automtls":
		// A skill whose SDK predates the host-made server certificate:
		// go-plugin's AutoMTLS makes its own.
		os.Unsetenv(sdk.ServerTLSFDEnv)
	}
	s := sdk.New(name, version, "Test skill "+name+": echoes, sleeps and misbehaves on request.")
	s.Tags = []string{"test", name}
	sdk.Tool(s, "echo", "Echo a message back with the serving version.", func(ctx context.Context, in echoIn) (echoOut, error) {
		return echoOut{Version: version, Msg: in.Msg, PID: os.Getpid()}, nil
	}, sdk.ReadOnly())
	sdk.Tool(s, "sleep", "Sleep for ms milliseconds, then answer with the version.", func(ctx context.Context, in sleepIn) (echoOut, error) {
		t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
		defer t.Stop()
		if in.Ignore {
			<-t.C
			return echoOut{Version: version, Msg: "slept"}, nil
		}
		select {
		case <-t.C:
			return echoOut{Version: version, Msg: "slept"}, nil
		case <-ctx.Done():
			return echoOut{}, ctx.Err()
		}
	})
	sdk.Tool(s, "env", "Return the environment, uid, gid, groups and GOMAXPROCS the skill runs with, and the ms left before the call's deadline.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		groups, _ := os.Getgroups()
		out := map[string]any{"env": os.Environ(), "uid": os.Getuid(), "gid": os.Getgid(), "groups": groups, "gomaxprocs": runtime.GOMAXPROCS(0)}
		if d, ok := ctx.Deadline(); ok {
			out["deadline_ms"] = time.Until(d).Milliseconds()
		}
		return out, nil
	}, sdk.ReadOnly())
	sdk.Tool(s, "crash", "Exit the process at once.", func(ctx context.Context, in struct{}) (echoOut, error) {
		os.Exit(7)
		return echoOut{}, nil
	})
	sdk.Tool(s, "spawn", "Start a long-lived child process and return its pid.", func(ctx context.Context, in struct{}) (map[string]int, error) {
		cmd := exec.Command("/bin/sleep", "300")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return map[string]int{"pid": cmd.Process.Pid}, nil
	})
	sdk.Tool(s, "big", "Return a string of the given length.", func(ctx context.Context, in bigIn) (string, error) {
		return strings.Repeat("x", in.Bytes), nil
	}, sdk.ReadOnly())
	if os.Getenv("TESTSKILL_SHOUT") != "" { // opt-in, so other tests' tool sets stay as they were
		sdk.Tool(s, "shout", "Print the message to stdout and stderr, then echo it.", func(ctx context.Context, in echoIn) (echoOut, error) {
			fmt.Println("stdout says", in.Msg)
			fmt.Fprintln(os.Stderr, "stderr says", in.Msg)
			sdk.Logger().Warn("logger says", "msg", in.Msg)
			return echoOut{Version: version, Msg: in.Msg, PID: os.Getpid()}, nil
		})
	}
	if os.Getenv("TESTSKILL_RELAY") != "" { // opt-in, as shout
		sdk.Tool(s, "relay", "Call the hosted tool named in tool with args through the host (sdk.Call) and return its result.", func(ctx context.Context, in relayIn) (relayOut, error) {
			res, err := sdk.Call(ctx, in.Tool, in.Args)
			var ce *sdk.CallError
			if errors.As(err, &ce) {
				// The host's code, for the caller to see as tool_code.
				return relayOut{}, &sdk.Error{Code: ce.Code, Message: ce.Message, Retryable: ce.Retryable}
			}
			if err != nil {
				return relayOut{}, err
			}
			return relayOut{Version: version, CallID: sdk.CallID(ctx), Result: res}, nil
		})
	}
	if file := os.Getenv("TESTSKILL_COUNTER"); file != "" { // opt-in, like shout
		sdk.Tool(s, "count", "Count this call: append a line to the counter file and return how many it holds.", func(ctx context.Context, in struct{}) (map[string]int, error) {
			return countCall(file)
		})
	}
	sdk.Tool(s, "fail", "Refuse with a tool error.", func(ctx context.Context, in struct{}) (echoOut, error) {
		return echoOut{}, sdk.Errorf("not_today", "the tool refuses")
	})
	s.Serve()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// rawServer describes a tool whose schema does not compile, which the SDK's
// typed API cannot produce.
type rawServer struct {
	skillpb.UnimplementedSkillServer
	name, version string
}

func (r rawServer) Describe(context.Context, *skillpb.DescribeRequest) (*skillpb.DescribeResponse, error) {
	return &skillpb.DescribeResponse{Name: r.name, Version: r.version, Tools: []*skillpb.Tool{{
		Name: "broken", Description: "A tool with a broken schema.",
		InputSchema: []byte(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`),
	}}}, nil
}

func serveRaw(name, version string) {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         sdk.PluginSet(rawServer{name: name, version: version}),
		GRPCServer:      sdk.GRPCServerFactory,
	})
}

// countCall appends a line to file and returns the number of lines, so a
// test can tell how often a tool was really called across host restarts.
func countCall(file string) (map[string]int, error) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString("called\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return map[string]int{"count": strings.Count(string(b), "\n")}, nil
}
