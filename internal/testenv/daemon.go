package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Daemon is a real `host serve` process started by a test.
type Daemon struct {
	URL   string // http://127.0.0.1:PORT
	Addr  string
	Token string // sent as a bearer token when set
	Cmd   *exec.Cmd

	mu     sync.Mutex // guards logs
	logs   bytes.Buffer
	waited chan struct{}
	err    error
	killed bool // Kill was called: a "killed" exit is expected
}

// Kill sends SIGKILL and waits for the exit; the test's cleanup then
// expects no clean exit.
func (d *Daemon) Kill() {
	d.killed = true
	d.Cmd.Process.Kill()
	<-d.waited
}

type lockedWriter struct{ d *Daemon }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	if testing.Verbose() {
		os.Stderr.Write(p)
	}
	return w.d.logs.Write(p)
}

// StartDaemon runs `bin serve --listen 127.0.0.1:0 --state-dir TEMP args...`
// and waits until it listens. The daemon is stopped (SIGTERM, then SIGKILL) when the test
// ends. Environment: the test's, plus env.
func StartDaemon(t testing.TB, bin string, env []string, args ...string) *Daemon {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	// A state folder of its own, so the default ./.state never lands in the
	// package under test; a --state-dir in args comes later and wins.
	full := append([]string{"serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--state-dir", t.TempDir()}, args...)
	d := &Daemon{waited: make(chan struct{})}
	d.Cmd = exec.Command(bin, full...)
	d.Cmd.Env = append(os.Environ(), env...)
	d.Cmd.Stdout = lockedWriter{d}
	d.Cmd.Stderr = lockedWriter{d}
	if err := d.Cmd.Start(); err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	go func() {
		d.err = d.Cmd.Wait()
		close(d.waited)
	}()
	t.Cleanup(func() {
		if err := d.Stop(20 * time.Second); err != nil {
			t.Errorf("daemon stop: %v\n%s", err, d.Logs())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			d.Addr = strings.TrimSpace(string(b))
			d.URL = "http://" + d.Addr
			return d
		}
		select {
		case <-d.waited:
			t.Fatalf("daemon exited before listening: %v\n%s", d.err, d.Logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not listen within 60s\n%s", d.Logs())
		}
	}
}

// Logs returns everything the daemon printed so far.
func (d *Daemon) Logs() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

// Signal sends sig to the daemon.
func (d *Daemon) Signal(sig syscall.Signal) { d.Cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
// It returns the exit error (nil for exit 0). Safe to call more than once.
func (d *Daemon) Stop(timeout time.Duration) error {
	select {
	case <-d.waited:
		return d.exitErr()
	default:
	}
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.waited:
		return d.exitErr()
	case <-time.After(timeout):
		d.Cmd.Process.Kill()
		<-d.waited
		return fmt.Errorf("daemon did not stop within %v after SIGTERM", timeout)
	}
}

// Wait waits for the daemon to exit on its own.
func (d *Daemon) Wait(timeout time.Duration) error {
	select {
	case <-d.waited:
		return d.exitErr()
	case <-time.After(timeout):
		return fmt.Errorf("daemon still running after %v", timeout)
	}
}

func (d *Daemon) exitErr() error {
	if d.err != nil && !d.killed {
		return fmt.Errorf("%w\n%s", d.err, d.Logs())
	}
	return nil
}

// Do sends a request with an optional JSON body (a string or []byte is sent
// as is) and returns the status and body.
func (d *Daemon) Do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	r, err := JSONBody(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, d.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// BuildExamples builds the example skills into root with
// scripts/build-skills.sh, exactly as the README does.
func BuildExamples(root string) error {
	cmd := exec.Command("bash", "scripts/build-skills.sh", "--out", root)
	cmd.Dir = ModuleRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build-skills.sh: %v\n%s", err, b)
	}
	return nil
}

// CopyTree copies a built skills tree (from BuildExamples) into a fresh
// temp folder of the test, so each test can change its own tree.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// CopyFS does not keep the executable bits; restore them on binaries.
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Base(p) != "manifest.json" {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	return dst
}

// JSONBody is a request body: nil for none, a string or []byte as is, any
// other value encoded as JSON.
func JSONBody(body any) (io.Reader, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.NewReader(b), nil
	case []byte:
		return bytes.NewReader(b), nil
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		return bytes.NewReader(j), nil
	}
}

// Binaries are what the end-to-end suites build once in TestMain.
type Binaries struct {
	Host, Skill string // cmd/host and internal/testskill
	Examples    string // a tree of the example skills, built by build-skills.sh
}

// RunWithBinaries is the body of TestMain for a suite that drives real
// daemons: it builds the host, the test skill and the example skills into a
// temporary folder, hands them to use (which may prepare more and fail),
// runs the tests and removes the folder. It returns the exit code.
func RunWithBinaries(m *testing.M, use func(Binaries) error) int {
	dir, err := os.MkdirTemp("", "skillhost-bins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins, err := BuildAll(dir)
	if err == nil {
		err = use(bins)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// BuildAll builds the host, the test skill and the example skills into dir.
func BuildAll(dir string) (Binaries, error) {
	var b Binaries
	var err error
	if b.Host, err = Build(dir, "./cmd/host"); err != nil {
		return b, err
	}
	if b.Skill, err = Build(dir, "./internal/testskill"); err != nil {
		return b, err
	}
	b.Examples = filepath.Join(dir, "examples")
	return b, BuildExamples(b.Examples)
}
