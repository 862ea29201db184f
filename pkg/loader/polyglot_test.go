package loader

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/pkg/registry"
	"github.com/skillhost/skillhost/sdk"
)

// TestNodeSkill runs the example skill written in JavaScript
// (examples/polyglot/wordstats-node) as an ordinary go-plugin skill: the
// host's handshake and mutual TLS, Describe's tools and schemas, calls, a
// tool's own error, the host's schema check, a client without the host's
// certificate refused, and the skill's exit when the
// host stops it.
func TestNodeSkill(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.StartTimeout = 60 * time.Second }) // node under -race on a shared machine
	testenv.InstallNodeSkill(t, h.root)
	began := time.Now()
	h.start()
	t.Logf("loader started with the node skill serving in %v", time.Since(began).Round(time.Millisecond))

	var names []string
	for _, tool := range h.reg.Snapshot().Tools() {
		if tool.Skill == "wordstats" {
			names = append(names, tool.Name)
			if !json.Valid(tool.InputSchema) || !tool.Annotations.ReadOnly {
				t.Errorf("%s: input schema %s, annotations %+v", tool.Name, tool.InputSchema, tool.Annotations)
			}
		}
	}
	if want := []string{"wordstats.count", "wordstats.top_words"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v; status %+v", names, want, h.status("wordstats"))
	}

	res, err := h.call("wordstats.count", `{"text":"the cat\nsat on the mat\n"}`)
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Words, Lines, Chars int }
	if err := json.Unmarshal(res.Result, &count); err != nil || count.Words != 6 || count.Lines != 2 || count.Chars != 23 || res.Version != "1.0.0" {
		t.Fatalf("count: %s (%v) from %s", res.Result, err, res.Version)
	}
	res, err = h.call("wordstats.top_words", `{"text":"The cat saw the dog; the dog saw a cat. A cow.","n":3}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Result), `{"words":[{"word":"the","count":3},{"word":"a","count":2},{"word":"cat","count":2}]}`; got != want {
		t.Fatalf("top_words: %s, want %s", got, want)
	}

	// The tool's own refusal arrives in the protocol's error shape.
	_, err = h.call("wordstats.top_words", `{"text":" ... "}`)
	if e := registry.AsError(err); e.Code != registry.CodeToolError || e.Details["tool_code"] != "empty_text" || e.Message == "" {
		t.Fatalf("top_words on no words: %v (%+v)", err, e)
	}
	// The host checks the arguments against the skill's schema.
	if _, err := h.call("wordstats.top_words", `{"text":"a","n":0}`); registry.CodeOf(err) != registry.CodeInvalidArguments {
		t.Fatalf("n=0: %v, want %s", err, registry.CodeInvalidArguments)
	}

	// The skill serves the host's client certificate and no other.
	stranger, err := proc.NewClientCert()
	if err != nil {
		t.Fatal(err)
	}
	addr := h.activeInstance("wordstats").client.ReattachConfig().Addr
	if err := tlsRead(addr.Network(), addr.String(), stranger); err == nil {
		t.Error("the node skill accepted a TLS client with a key the host never made")
	}
	if err := tlsRead(addr.Network(), addr.String(), h.l.mtls); err != nil {
		t.Errorf("the node skill refused the host's key: %v", err)
	}

	// Stopping the host: the skill is asked to shut down and exits.
	pid := activePID(t, h.status("wordstats"))
	h.l.Close(t.Context())
	if !testenv.WaitFor(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatalf("skill process %d still running after the loader closed", pid)
	}
}

// TestNodeSkillExitsWhenOrphaned checks the JavaScript skill's own watch
// on its parent, which covers a missed parent-death signal: started by a
// shell that exits at once (no Pdeathsig, no Shutdown call), the skill
// serves, notices it was reparented, and exits.
func TestNodeSkillExitsWhenOrphaned(t *testing.T) {
	skill := filepath.Join(testenv.NodeSkill(t), "skill")
	client, err := proc.NewClientCert()
	if err != nil {
		t.Fatal(err)
	}
	server, err := proc.NewServerIdentity()
	if err != nil {
		t.Fatal(err)
	}
	tlsPipe, err := server.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer tlsPipe.Close()
	// The shell prints the skill's pid, then exits when told (after the
	// handshake, so the skill saw it as its parent); the skill writes its
	// handshake line to the same stdout.
	cmd := exec.Command("bash", "-c", `"$0" & echo "$!"; read -r _`, skill)
	cmd.Env = []string{"SKILLHOST_SKILL=" + sdk.Handshake.MagicCookieValue, client.Env(), sdk.ServerTLSFDEnv + "=3",
		plugin.EnvUnixSocketDir + "=" + t.TempDir()}
	cmd.ExtraFiles = []*os.File{tlsPipe}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	exitShell, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tlsPipe.Close()
	lines := bufio.NewScanner(out)
	var pid int
	var handshake string
	for (pid == 0 || handshake == "") && lines.Scan() {
		if n, err := strconv.Atoi(lines.Text()); err == nil {
			pid = n
		} else {
			handshake = lines.Text()
		}
	}
	exitShell.Write([]byte("\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the shell: %v", err)
	}
	if pid == 0 || !strings.HasPrefix(handshake, "1|1|unix|") || !strings.HasSuffix(handshake, "|grpc") {
		t.Fatalf("pid %d, handshake line %q", pid, handshake)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return !testenv.Alive(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("orphaned skill %d still running 10 s after its parent exited", pid)
	}
	// Reaped already unless an earlier test made this process a subreaper.
	syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
}
