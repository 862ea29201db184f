package main

// The MCP face's wiring. Its behaviour against a real daemon, over HTTP and
// both stdio modes, is tested in pkg/mcp (daemon_test.go) and by
// scripts/mcp-conformance.sh with the TypeScript SDK.

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/pkg/host"
	"github.com/skillhost/skillhost/pkg/mcp"
)

func TestMCPFaceFollowsItsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *host.MCPConfig
	}{
		{nil, &host.MCPConfig{}},
		{[]string{"--mcp-show-unavailable"}, &host.MCPConfig{ShowUnavailable: true}},
		{[]string{"--mcp-discovery", "search"}, &host.MCPConfig{Discovery: mcp.DiscoverySearch}},
		{[]string{"--mcp=false"}, nil},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		config := mcpServeFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := config(); (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%q: MCP config %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestMCPEndpoint(t *testing.T) {
	filter, err := mcp.ParseFilter(map[string][]string{"tags": {"math"}, "read_only": {"true"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr   string
		filter mcp.Filter
		want   string
	}{
		{"127.0.0.1:7070", mcp.Filter{}, "http://127.0.0.1:7070/mcp"},
		{"http://127.0.0.1:7070/", mcp.Filter{}, "http://127.0.0.1:7070/mcp"},
		{"https://skills.example:8443/mcp", filter, "https://skills.example:8443/mcp?read_only=true&tags=math"},
		{"http://h:1/custom/mcp?x=1", filter, "http://h:1/custom/mcp?read_only=true&tags=math&x=1"},
		{"unix:/run/skillhost.sock", mcp.Filter{}, "http://unix/mcp"},
	} {
		got, hc, err := mcpEndpoint(tc.addr, mcp.Endpoint{Filter: tc.filter})
		if err != nil || got != tc.want || hc == nil {
			t.Errorf("mcpEndpoint(%q) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
	if _, _, err := mcpEndpoint("http://", mcp.Endpoint{}); err == nil {
		t.Error("an address without a host was accepted")
	}
	got, _, err := mcpEndpoint("127.0.0.1:7070", mcp.Endpoint{Filter: filter, Discovery: mcp.DiscoverySearch})
	if want := "http://127.0.0.1:7070/mcp?discovery=search&read_only=true&tags=math"; err != nil || got != want {
		t.Errorf("with discovery: %q %v, want %q", got, err, want)
	}
}

func TestMCPCommandExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"mcp", "--bogus"}, &out, &errb); code != exitUsage {
		t.Errorf("unknown flag: exit %d", code)
	}
	if code := run([]string{"mcp", "--tags", strings.Repeat("x", 65)}, &out, &errb); code != exitUsage {
		t.Errorf("bad filter: exit %d", code)
	}
	errb.Reset()
	if code := run([]string{"mcp", "-h"}, &out, &errb); code != exitOK || !strings.Contains(errb.String(), "--addr") {
		t.Errorf("-h: exit %d\n%s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"mcp", "--addr", "127.0.0.1:1", "--log-level", "error"}, &out, &errb); code != exitUnreachable {
		t.Errorf("unreachable daemon: exit %d\n%s", code, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout is the protocol, yet the command printed %q", out.String())
	}
}
