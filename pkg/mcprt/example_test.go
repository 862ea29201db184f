package mcprt_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillhost/skillhost/pkg/mcprt"
)

// The operator allows interpreters by name; a manifest picks one of them or
// a file in its own folder, and nothing else.
func ExampleResolveCommand() {
	interp := mcprt.Interpreters{}
	if err := interp.Set("sh=/bin/sh"); err != nil { // --runtime sh=/bin/sh
		fmt.Println(err)
		return
	}
	for _, command := range []string{"sh", "/usr/bin/node", "../../bin/tool", "python3"} {
		path, err := mcprt.ResolveCommand(command, interp, "/nonexistent/run/app")
		switch {
		case err == nil:
			fmt.Printf("%-15s runs %s\n", command, path)
		case errors.Is(err, mcprt.ErrAbsoluteCommand):
			fmt.Printf("%-15s refused: an absolute path\n", command)
		case errors.Is(err, mcprt.ErrCommandEscapes):
			fmt.Printf("%-15s refused: leaves the version folder\n", command)
		case errors.Is(err, mcprt.ErrUnknownInterpreter):
			fmt.Printf("%-15s refused: not an allowed interpreter\n", command)
		}
	}
	// Output:
	// sh              runs /bin/sh
	// /usr/bin/node   refused: an absolute path
	// ../../bin/tool  refused: leaves the version folder
	// python3         refused: not an allowed interpreter
}

// The digest covers every file but manifest.json, so a manifest can hold it.
func ExampleFolderDigest() {
	dir, _ := os.MkdirTemp("", "version-")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "server.js"), []byte("console.error('ready')\n"), 0o644)
	before, _ := mcprt.FolderDigest(dir)
	_ = os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"sha256": "`+before+`"}`), 0o644)
	after, _ := mcprt.FolderDigest(dir)
	fmt.Println(before == after, len(after))
	// Output: true 64
}
