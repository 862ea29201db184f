package main

import (
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/skillhost/skillhost/internal/bench/rpcplugin"
	"github.com/skillhost/skillhost/sdk"
)

func main() {
	go exitWithParent(os.Getppid())
	// No GRPCServer: go-plugin serves net/rpc.
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: sdk.Handshake,
		Plugins:         rpcplugin.PluginSet(),
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

// exitWithParent ends the process once its parent (the harness) is gone,
// however it died.
func exitWithParent(ppid int) {
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != ppid {
			os.Exit(3)
		}
	}
}
