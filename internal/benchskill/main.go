package main

import (
	"os"

	"github.com/skillhost/skillhost/internal/bench/tools"
	"github.com/skillhost/skillhost/sdk"
)

func main() {
	name := envOr("BENCHSKILL_NAME", "bench")
	version := envOr("BENCHSKILL_VERSION", "1.0.0")
	s := sdk.New(name, version, "Benchmark skill "+name+": echo and a 64 KiB blob.")
	s.Tags = []string{"bench"}
	s.Env = map[string]string{"BENCHSKILL_NAME": name, "BENCHSKILL_VERSION": version}
	sdk.Tool(s, tools.EchoTool, tools.EchoDescription, tools.Echo, sdk.ReadOnly())
	sdk.Tool(s, tools.BlobTool, tools.BlobDescription, tools.Blob, sdk.ReadOnly())
	s.Serve()
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
