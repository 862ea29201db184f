package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

type server struct {
	skillpb.UnimplementedSkillServer
	mode string
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func tool(name string, schema []byte) *skillpb.Tool {
	return &skillpb.Tool{Name: name, Description: "Raw tool " + name + ".", InputSchema: schema}
}

func (s server) Describe(ctx context.Context, _ *skillpb.DescribeRequest) (*skillpb.DescribeResponse, error) {
	d := &skillpb.DescribeResponse{Name: kit.Name(), Version: kit.Version(), Description: "Raw skill in mode " + s.mode + "."}
	switch s.mode {
	case "protocol":
		for _, n := range []string{"good", "badjson", "empty", "oversize", "liar", "panic"} {
			d.Tools = append(d.Tools, tool(n, kit.ObjectSchema))
		}
		d.Tools[4].OutputSchema = []byte(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`)
	case "manytools":
		n := envInt("RAW_TOOLS", 10000)
		for i := 0; i < n; i++ {
			d.Tools = append(d.Tools, tool(fmt.Sprintf("t%d", i), kit.ObjectSchema))
		}
	case "hugeschema":
		mib := envInt("RAW_MIB", 10)
		d.Tools = append(d.Tools, tool("good", kit.ObjectSchema),
			tool("huge", []byte(`{"type":"object","description":"`+strings.Repeat("x", mib<<20)+`"}`)))
	case "hugedescribe":
		mib := envInt("RAW_MIB", 20)
		chunk := `{"type":"object","description":"` + strings.Repeat("y", 900<<10) + `"}`
		for i := 0; i*len(chunk) < mib<<20; i++ {
			d.Tools = append(d.Tools, tool(fmt.Sprintf("t%d", i), []byte(chunk)))
		}
	case "ref":
		t := tool("ref", []byte(kit.EnvOr("RAW_SCHEMA", `{"type":"object"}`)))
		if out := os.Getenv("RAW_OUTPUT_SCHEMA"); out != "" {
			t.OutputSchema = []byte(out)
		}
		d.Tools = append(d.Tools, t)
	case "slowdescribe":
		select {} // not even the host's deadline ends this
	default:
		d.Tools = append(d.Tools, tool("good", kit.ObjectSchema))
	}
	return d, nil
}

func (s server) Invoke(ctx context.Context, r *skillpb.InvokeRequest) (*skillpb.InvokeResponse, error) {
	switch r.Tool {
	case "badjson":
		return &skillpb.InvokeResponse{Result: []byte(`{"answer": 42, oops`)}, nil
	case "empty":
		return &skillpb.InvokeResponse{}, nil
	case "liar":
		return &skillpb.InvokeResponse{Result: []byte(`{"answer":"forty-two"}`)}, nil
	case "oversize":
		var in struct{ Bytes int }
		json.Unmarshal(r.Arguments, &in)
		return &skillpb.InvokeResponse{Result: []byte(`"` + strings.Repeat("z", in.Bytes) + `"`)}, nil
	case "panic":
		panic("raw skill: panic in a handler, which gRPC does not recover")
	}
	return kit.Echo(ctx, r)
}

func main() {
	kit.ServeRaw(server{mode: kit.EnvOr("RAW_MODE", "protocol")})
}
