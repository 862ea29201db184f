package mcprt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInterpretersSet(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m := Interpreters{}
	if err := m.Set("node=" + exe); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	if m["node"] != exe || m.String() != "node="+exe {
		t.Errorf("after Set: %v", m)
	}
	for _, bad := range []string{
		"node",               // no path
		"Node=" + exe,        // not a plain lowercase name
		"../x=" + exe,        // a path as a name
		"node=bin/node",      // relative
		"node=/usr/../x",     // not clean
		"py=" + dir,          // a folder
		"py=" + plain,        // not executable
		"py=" + dir + "/nop", // missing
		"node=/bin/sh",       // node is already set to something else
	} {
		if err := m.Set(bad); !errors.Is(err, ErrBadInterpreter) {
			t.Errorf("Set(%q): want ErrBadInterpreter, got %v", bad, err)
		}
	}
}

func TestResolveCommand(t *testing.T) {
	exe, _ := os.Executable()
	interp := Interpreters{"node": exe}
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "bin", "server"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "data.txt"), nil, 0o644))
	must(os.Symlink(exe, filepath.Join(dir, "link")))

	for _, tc := range []struct {
		command string
		want    string // the resolved path, or
		err     error  // the error
	}{
		{command: "node", want: exe},
		{command: "./bin/server", want: filepath.Join(dir, "bin", "server")},
		{command: "bin/server", want: filepath.Join(dir, "bin", "server")},
		{command: "", err: ErrNoCommand},
		{command: "/usr/bin/node", err: ErrAbsoluteCommand},
		{command: "../bin/server", err: ErrCommandEscapes},
		{command: "bin/../../x", err: ErrCommandEscapes},
		{command: "python3", err: ErrUnknownInterpreter},
		{command: "sh", err: ErrUnknownInterpreter}, // never a PATH lookup
		{command: "./data.txt", err: ErrCommandNotFound},
		{command: "./bin", err: ErrCommandNotFound},
		{command: "./missing", err: ErrCommandNotFound},
		{command: "./link", err: ErrCommandNotFound}, // a link is not followed
	} {
		got, err := ResolveCommand(tc.command, interp, dir)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%q: want %v, got %q, %v", tc.command, tc.err, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.command, got, err, tc.want)
		}
	}
	_, err := ResolveCommand("python3", interp, dir)
	if msg := err.Error(); !strings.Contains(msg, "--runtime python3=") || !strings.Contains(msg, "allowed: node") {
		t.Errorf("the refusal should say how to allow it and what is allowed: %s", msg)
	}
}

func TestSpecCheckReportsEverything(t *testing.T) {
	s := Spec{Command: "/bin/sh", Args: []string{strings.Repeat("a", maxArgBytes+1), "x\x00y"}, SHA256: "ABC"}
	err := s.Check(nil)
	for _, want := range []error{ErrAbsoluteCommand} {
		if !errors.Is(err, want) {
			t.Errorf("want %v in %v", want, err)
		}
	}
	for _, want := range []string{"args[0]", "args[1]: contains a NUL", "sha256 \"ABC\""} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	if err := (Spec{Command: "./server", SHA256: strings.Repeat("0", 64)}).Check(nil); err != nil {
		t.Errorf("a good spec: %v", err)
	}
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"echo":            "echo",
		"get-sum":         "get-sum",
		"create_entities": "create_entities",
		"getTinyImage":    "get_tiny_image",
		"files.read":      "files_read",
		"HTTPGet":         "httpget",
		"list files":      "list_files",
		"v2Search":        "v2_search",
	} {
		if got, ok := ToolName(in); !ok || got != want {
			t.Errorf("ToolName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "Bad Name!", "_x", "a__b", "工具", "9lives"} {
		if got, ok := ToolName(in); ok {
			t.Errorf("ToolName(%q) = %q, want no valid name", in, got)
		}
	}
}
