package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// daemon is a real `host serve` process.
type daemon struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	waited  chan struct{}
	started time.Time
	ready   time.Duration // from exec to the addr file: every skill started
}

// startDaemon runs hostBin serve on 127.0.0.1:0 (the default kind of
// address) over skills with private
// state and run folders under work, and returns once the address file is
// written, which the daemon does after its first scan has started (or
// failed) every skill.
func startDaemon(hostBin, skills, work string, extra ...string) (*daemon, error) {
	return startDaemonEnv(hostBin, skills, work, "127.0.0.1:0", nil, extra...)
}

// daemonPath installs bin as skill bench in a tree of its own under work,
// starts a daemon over it (listening on listen, with env added to its
// environment and extra flags) and returns the path, named by key, that
// calls it over the API; closing the path stops the daemon.
func daemonPath(hostBin string, bin *skillBinary, work, key, listen string, env []string, extra ...string) (*path, error) {
	root := filepath.Join(work, "skills")
	if err := bin.install(root, "bench", "1.0.0"); err != nil {
		return nil, err
	}
	d, err := startDaemonEnv(hostBin, root, work, listen, env, extra...)
	if err != nil {
		return nil, err
	}
	p := httpPath(d.url, "bench")
	p.key, p.name, p.peer = key, pathNames[key], d.cmd.Process.Pid
	idle := p.close
	p.close = func() { idle(); d.stop() }
	return p, nil
}

// startDaemonEnv is startDaemon with another --listen address (for
// "unix:PATH", url is "unix:PATH") and env added to the daemon's
// environment.
func startDaemonEnv(hostBin, skills, work, listen string, env []string, extra ...string) (*daemon, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	addrFile := filepath.Join(work, "addr")
	os.Remove(addrFile)
	args := append([]string{"serve", "--listen", listen, "--addr-file", addrFile,
		"--skills", skills, "--state-dir", filepath.Join(work, "state"), "--run-dir", filepath.Join(work, "run"),
		"--log-format", "json", "--log-level", "info"}, extra...)
	d := &daemon{waited: make(chan struct{}), logPath: filepath.Join(work, "host.log")}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, err
	}
	d.cmd = exec.Command(hostBin, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start host: %w", err)
	}
	go func() {
		d.cmd.Wait()
		logf.Close()
		close(d.waited)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && strings.HasSuffix(string(b), "\n") {
			d.ready = time.Since(d.started)
			d.url = "http://" + strings.TrimSpace(string(b))
			if strings.HasPrefix(listen, "unix:") {
				d.url = listen
			}
			return d, nil
		}
		select {
		case <-d.waited:
			return nil, fmt.Errorf("host exited before listening; log %s:\n%s", d.logPath, tail(d.logPath))
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("host did not write its address within 2 min; log %s", d.logPath)
		}
	}
}

// loadTook returns the duration the daemon logged for its first scan
// ("skills loaded ... took"), or 0.
func (d *daemon) loadTook() time.Duration { return d.logTook("skills loaded") }

// logTook returns the "took" of the first log line whose message is msg,
// or 0.
func (d *daemon) logTook(msg string) time.Duration {
	f, err := os.Open(d.logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["@message"] != msg {
			continue
		}
		switch v := line["took"].(type) {
		case string:
			t, _ := time.ParseDuration(v)
			return t
		case float64:
			return time.Duration(v)
		}
	}
	return 0
}

// get fetches path and decodes its JSON into v.
func (d *daemon) get(path string, v any) error {
	resp, err := http.Get(d.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// stop sends SIGTERM, waits, then kills. Safe to call twice.
func (d *daemon) stop() {
	select {
	case <-d.waited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.waited:
	case <-time.After(20 * time.Second):
		d.cmd.Process.Kill()
		<-d.waited
	}
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
