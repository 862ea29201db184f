package main

import (
	"context"
	"fmt"
	"os"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

type server struct {
	skillpb.UnimplementedSkillServer
}

func (server) Describe(context.Context, *skillpb.DescribeRequest) (*skillpb.DescribeResponse, error) {
	fmt.Fprintln(os.Stderr, "exitnow: exiting in Describe as asked")
	os.Exit(5)
	return nil, nil
}

func main() {
	if os.Getenv("EXIT_WHEN") == "describe" {
		kit.ServeRaw(server{})
		return
	}
	fmt.Fprintln(os.Stderr, "exitnow: exiting at start as asked")
	os.Exit(3)
}
