package chart

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonTakesThePodsArguments runs this tree's `host serve` with the
// arguments the chart gives the container, its paths moved into a temporary
// folder laid out as the pod's volumes are (the secret file of mode 0400,
// the folders with the init container's modes), and the listen address
// moved to loopback. It checks what the kubelet relies on: the daemon
// starts with those values, answers both probes without a token to a Host
// that is the pod's address, refuses the API without the token, and on
// SIGTERM stops within --grace.
func TestDaemonTakesThePodsArguments(t *testing.T) {
	o := mustRender(t, minimal())
	ctr := container(t, o.deploy.Spec.Template.Spec)

	root := t.TempDir()
	paths := map[string]string{
		"/var/lib/skillhost":     filepath.Join(root, "data"),
		"/etc/skillhost/secrets": filepath.Join(root, "secrets"),
		"/opt/skillhost/skills":  filepath.Join(root, "image-skills"),
	}
	for dir, mode := range map[string]os.FileMode{
		"data": 0o777, "data/skills": 0o755, "data/state": 0o700, "data/run": 0o711,
		"secrets": 0o755, "image-skills": 0o755,
	} {
		p := filepath.Join(root, dir)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	const token = "chart-test-token"
	if err := os.WriteFile(filepath.Join(root, "secrets", "token"), []byte(token+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}

	addrFile := filepath.Join(root, "addr")
	args := []string{"serve", "--addr-file=" + addrFile}
	for _, a := range ctr.Args[1:] {
		switch {
		case strings.HasPrefix(a, "--listen="):
			a = "--listen=127.0.0.1:0"
		case strings.HasPrefix(a, "--skill-user=") && os.Geteuid() != 0:
			continue // needs root, which the container is
		}
		for from, to := range paths {
			a = strings.Replace(a, "="+from, "="+to, 1)
		}
		if strings.Contains(a, "=/") && !strings.Contains(a, "="+root) {
			t.Fatalf("argument %s names a path of the pod that this test does not lay out", a)
		}
		args = append(args, a)
	}
	flags := parseArgs(t, args)

	cmd := exec.Command(hostBin, args...)
	logFile, err := os.Create(filepath.Join(root, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once the daemon has exited, with its error in waitErr.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	// The address file appears once /readyz would answer 200.
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" {
		b, err := os.ReadFile(addrFile)
		if err == nil {
			addr = strings.TrimSpace(string(b))
			break
		}
		select {
		case <-exited:
			t.Fatalf("host serve %q exited before it was ready: %v\n%s", args, waitErr, logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("host serve not ready within 30s\n%s", logs())
		}
	}

	get := func(path string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "10.1.2.3:7070" // the kubelet sends the pod's address
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, p := range []string{
		ctr.ReadinessProbe.HTTPGet.Path, ctr.LivenessProbe.HTTPGet.Path, ctr.StartupProbe.HTTPGet.Path,
	} {
		if code := get(p); code != http.StatusOK {
			t.Errorf("probe GET %s without a token = %d, want 200", p, code)
		}
	}
	if code := get("/v1/skills"); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/skills without the token = %d, want 401", code)
	}
	http.DefaultClient.CloseIdleConnections()

	grace, err := time.ParseDuration(flags["grace"])
	if err != nil {
		t.Fatalf("--grace=%s: %v", flags["grace"], err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("host serve exited with %v after SIGTERM, want 0\n%s", waitErr, logs())
		}
	case <-time.After(grace):
		t.Fatalf("host serve still running %v after SIGTERM (--grace)\n%s", grace, logs())
	}
	if _, err := os.Stat(addrFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("address file left after the stop: %v", err)
	}
}
