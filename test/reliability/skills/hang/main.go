package main

import (
	"context"
	"os"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

func main() {
	s := sdk.New(kit.Name(), kit.Version(), "Hang: one tool never answers.")
	block := make(chan struct{})
	sdk.Tool(s, "hang", "Never answer, whatever the deadline says.", func(ctx context.Context, in struct{}) (struct{}, error) {
		<-block // ctx is ignored on purpose
		return struct{}{}, nil
	})
	sdk.Tool(s, "echo", "Answer with the pid and version.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		return map[string]any{"pid": os.Getpid(), "version": kit.Version()}, nil
	}, sdk.ReadOnly())
	s.Serve()
}
