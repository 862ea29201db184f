package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestServeInProcessLeavesTheProcessAlone runs `host serve` inside the
// test binary, as run() does for tests, and stops it with its context. A
// daemon that main did not start must not change the process it runs in:
// no watchdog child, not a child subreaper (so no orphan sweeper either:
// only the sweeper's constructor makes one), still dumpable.
func TestServeInProcessLeavesTheProcessAlone(t *testing.T) {
	root := t.TempDir()
	if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
		t.Fatal(err)
	}
	addrFile := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testenv.SyncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- dispatch(process{ctx: ctx}, []string{"serve", "--skills", root, "--listen", "127.0.0.1:0",
			"--state-dir", t.TempDir(), "--addr-file", addrFile}, io.Discard, &stderr)
	}()
	var addr []byte
	if !testenv.WaitFor(30*time.Second, func() bool {
		addr, _ = os.ReadFile(addrFile)
		return len(addr) > 0
	}) {
		t.Fatalf("serve never became ready:\n%s", stderr.String())
	}
	resp, err := http.Get("http://" + strings.TrimSpace(string(addr)) + "/v1/tools/alpha.echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/tools/alpha.echo: %d", resp.StatusCode)
	}
	if kids := testenv.CheckProcessUntouched(t); len(kids) == 0 {
		t.Error("the skill is not a child of the test process")
	}
	cancel()
	if code := <-exited; code != exitOK {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
	if left := testenv.Descendants(os.Getpid()); len(left) != 0 {
		t.Errorf("processes left after serve stopped: %v", left)
	}
	if _, err := os.Stat(addrFile); !os.IsNotExist(err) {
		t.Errorf("--addr-file outlived the daemon: %v", err)
	}
}
