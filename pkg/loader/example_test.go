package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Example runs a loader over a watched tree. The first version serves once
// Start returns; a second version dropped into the tree (staged beside it,
// then renamed in, as scripts/install-skill.sh does) takes over while the
// loader runs, and the registry routes the next call to it.
//
// The skill binary is internal/testskill, which this package's TestMain
// builds once (testSkillBin); any skill built with the SDK would do. The
// example waits on lifecycle events, never on the clock, so its output is
// the same on every run.
func Example() {
	tree, err := os.MkdirTemp("", "skills-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tree)

	reg := registry.New(registry.Config{})
	active := make(chan string, 4)
	ld, err := New(Config{
		Skills: tree, Registry: reg, Watch: true, Logger: hclog.NewNullLogger(),
		OnEvent: func(e Event) { // must not block
			if e.State == StateActive {
				active <- e.Version
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ld.Close(context.Background())
	served := func() string {
		select {
		case v := <-active:
			return v
		case <-time.After(30 * time.Second):
			return "nothing within 30s"
		}
	}

	if err := exampleInstall(tree, "greet", "1.0.0", testSkillBin); err != nil {
		fmt.Println(err)
		return
	}
	if err := ld.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("serving", served())

	// A new version appears in the watched tree: no call to the loader.
	if err := exampleInstall(tree, "greet", "1.1.0", testSkillBin); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("serving", served())

	res, err := reg.Invoke(context.Background(), "greet.echo", []byte(`{"msg":"hi"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var out struct{ Version, Msg string }
	json.Unmarshal(res.Result, &out)
	fmt.Printf("%s answered by %s: %s\n", res.Tool, out.Version, out.Msg)
	// Output:
	// serving 1.0.0
	// serving 1.1.0
	// greet.echo answered by 1.1.0: hi
}

// exampleInstall writes tree/skill/version/ with the binary and its
// manifest.json, atomically: staged in tree/.staging, then renamed in, so
// the watcher never sees half a folder and serves it without the debounce.
func exampleInstall(tree, skill, version, binary string) error {
	stage, err := os.MkdirTemp(tree, ".staging-")
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "skill"), bin, 0o755); err != nil {
		return err
	}
	sum := sha256.Sum256(bin)
	manifest, err := json.MarshalIndent(map[string]any{
		"manifest_version": 1, "name": skill, "version": version,
		"description": "An example skill.", "entrypoint": "skill", "sha256": hex.EncodeToString(sum[:]),
		"tags": []string{"example"},
		// internal/testskill takes the name and version it plays from its
		// environment, which is the manifest's env and nothing else.
		"env": map[string]string{"TESTSKILL_NAME": skill, "TESTSKILL_VERSION": version},
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "manifest.json"), manifest, 0o644); err != nil {
		return err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(tree, skill), 0o755); err != nil {
		return err
	}
	return os.Rename(stage, filepath.Join(tree, skill, version))
}
