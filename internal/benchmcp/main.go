package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/internal/bench/tools"
)

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "benchmcp", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: tools.EchoTool, Description: tools.EchoDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, in tools.EchoArgs) (*mcp.CallToolResult, tools.EchoArgs, error) {
			out, err := tools.Echo(ctx, in)
			return nil, out, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: tools.BlobTool, Description: tools.BlobDescription},
		func(ctx context.Context, _ *mcp.CallToolRequest, in tools.BlobArgs) (*mcp.CallToolResult, tools.BlobResult, error) {
			out, err := tools.Blob(ctx, in)
			return nil, out, err
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "benchmcp:", err)
		os.Exit(1)
	}
}
