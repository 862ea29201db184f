package sdk

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Logger returns a logger whose lines reach the host: go-plugin parses the
// JSON lines a skill writes to stderr and re-logs them under the host's
// skill@version logger. Every line carries the skill's pid.
func Logger() hclog.Logger { return logger }

var logger = hclog.New(&hclog.LoggerOptions{
	Level:      hclog.Debug,
	Output:     os.Stderr,
	JSONFormat: true,
}).With("pid", os.Getpid())

// Serve runs the skill until the host closes it. Call it from main.
//
// Arguments: --manifest prints the manifest skeleton as JSON and exits; with
// no arguments the process expects to have been started by skillhost (or
// another go-plugin host) and serves. Serve does not return. A skill the
// host would refuse (a name, version or description changed since New to
// one New refuses) makes it print why and exit with status 1.
func (s *Skill) Serve() {
	if err := s.check(); err != nil {
		fmt.Fprintf(os.Stderr, "sdk: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "--manifest", "-manifest", "manifest":
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(s.Manifest(filepath.Base(os.Args[0]))); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		default:
			fmt.Fprintf(os.Stderr, "%s %s: a skillhost skill.\nusage: %s [--manifest]\nWithout arguments it must be started by skillhost.\n",
				s.Name, s.Version, filepath.Base(os.Args[0]))
			if a := os.Args[1]; a == "-h" || a == "--help" || a == "help" {
				os.Exit(0)
			}
			os.Exit(2)
		}
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s %s is a skillhost skill: install it under skills/%s/%s/ and the host will start it (run with --manifest to print its manifest)\n",
			s.Name, s.Version, s.Name, s.Version)
		os.Exit(2)
	}
	handleTermination()
	go exitWithParent(os.Getppid())
	cfg := &plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         PluginSet(s.Server(logger)),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			srv := GRPCServerFactory(opts)
			serving.Store(srv)
			return srv
		},
		Logger: logger,
	}
	if tlsCfg, err := serverTLS(); err != nil {
		// go-plugin's AutoMTLS still authenticates both ends, at its cost.
		logger.Warn("the host's server certificate is unusable; falling back to go-plugin's own", "error", err)
	} else if tlsCfg != nil {
		cfg.TLSProvider = func() (*tls.Config, error) { return tlsCfg, nil }
	}
	plugin.Serve(cfg)
	os.Exit(int(exitStatus.Load()))
}

var (
	// serving is the gRPC server plugin.Serve runs, once it is built.
	serving atomic.Pointer[grpc.Server]
	// exitStatus is the status Serve exits with once plugin.Serve returns:
	// 0, or the one exit asked for.
	exitStatus atomic.Int32
)

// exit ends the process with status code by way of Serve: it stops the
// gRPC server, plugin.Serve returns and removes its unix socket, and Serve
// exits with code. Should that take more than 2 s, or the server not be
// built yet, it exits at once.
func exit(code int) {
	exitStatus.Store(int32(code))
	if srv := serving.Load(); srv != nil {
		srv.Stop()
		time.Sleep(2 * time.Second) // Serve exits meanwhile
	}
	os.Exit(code)
}

// exitWithParent ends the process (and its process group) when it is
// re-parented, which is how a child learns that its host died even from
// SIGKILL. The host also sets a parent-death signal on Linux; this covers
// other systems and hosts that do not.
func exitWithParent(ppid int) {
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != ppid {
			logger.Warn("host went away; exiting")
			exitGroup(3)
		}
	}
}
