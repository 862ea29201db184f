package mcprt

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSharedCopies(t *testing.T) {
	copies, err := NewCopies(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := helperConfig(t, "good")
	cfg.Copies = copies
	var dirs []string
	cfg.ConfigureCmd = func(c *exec.Cmd) { dirs = append(dirs, c.Dir) }
	exited := make(chan struct{}, 1)
	cfg.OnExit = func(*Instance) { exited <- struct{}{} }

	a := launch(t, cfg)
	b := launch(t, cfg)
	if dirs[0] != dirs[1] {
		t.Fatalf("two instances of one digest run from two copies: %s and %s", dirs[0], dirs[1])
	}
	// b crashes and restarts: its copy is still there, checked, reused.
	if err := syscall.Kill(b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	await(t, exited, "OnExit after SIGKILL")
	b.Kill()
	a.Close()
	c := launch(t, cfg)
	if dirs[2] != dirs[0] {
		t.Errorf("the restart made a new copy (%s) instead of reusing %s", dirs[2], dirs[0])
	}
	invoke(t, c, "echo", `{"message":"reused"}`)
	c.Close()

	// A copy that changed while idle is never run again.
	readme := filepath.Join(dirs[0], "README")
	if err := os.Chmod(readme, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("tampered\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := launch(t, cfg)
	if dirs[3] == dirs[0] {
		t.Fatal("a changed copy was reused")
	}
	if got, _ := FolderDigest(dirs[3]); got != cfg.Spec.SHA256 {
		t.Errorf("the new copy hashes to %s, not %s", got, cfg.Spec.SHA256)
	}
	if _, err := os.Stat(dirs[0]); !os.IsNotExist(err) {
		t.Errorf("the changed copy is still there: %v", err)
	}
	d.Close()

	copies.Prune()
	if ents, _ := os.ReadDir(copies.dir); len(ents) != 0 {
		t.Errorf("Prune left %d copies", len(ents))
	}
	copies.Close()
	if _, err := os.Stat(copies.dir); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", copies.dir, err)
	}
	if _, err := Launch(context.Background(), cfg); err == nil {
		t.Error("a launch after Close succeeded")
	}
	emptyDir(t, cfg.RunDir)
}
