//go:build linux

package reliability

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// manifestFor is a valid manifest for skill/version whose entrypoint
// "skill" holds bin; edit changes it.
func manifestFor(skill, version string, bin []byte, edit func(map[string]any)) []byte {
	sum := sha256.Sum256(bin)
	m := map[string]any{
		"manifest_version": 1, "name": skill, "version": version, "description": "Bad input case " + skill + ".",
		"entrypoint": "skill", "sha256": hex.EncodeToString(sum[:]),
		"env": map[string]any{"TESTSKILL_NAME": skill, "TESTSKILL_VERSION": version},
	}
	if edit != nil {
		edit(m)
	}
	b, _ := json.Marshal(m)
	return b
}

// foreignELF is an ELF header for an architecture this host is not.
func foreignELF() []byte {
	machine := elf.EM_AARCH64
	if runtime.GOARCH == "arm64" {
		machine = elf.EM_X86_64
	}
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56, Shentsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, h)
	return b.Bytes()
}

// badManifestCase is one broken version folder.
type badManifestCase struct {
	skill, version string
	setup          func(t *testing.T, dir, skill string, bin []byte)
	state          string // invalid or incomplete
	says           string // in one of the problems
}

func badManifestCases() []badManifestCase {
	writeM := func(t *testing.T, dir string, data []byte) {
		writeFile(t, filepath.Join(dir, "manifest.json"), data, 0o644)
	}
	entry := func(t *testing.T, dir, skill string, data []byte, mode os.FileMode) {
		writeFile(t, filepath.Join(dir, "skill"), data, mode)
		writeM(t, dir, manifestFor(skill, filepath.Base(dir), data, nil))
	}
	edit := func(fn func(map[string]any)) func(t *testing.T, dir, skill string, bin []byte) {
		return func(t *testing.T, dir, skill string, bin []byte) {
			writeM(t, dir, manifestFor(skill, filepath.Base(dir), bin, fn))
		}
	}
	return []badManifestCase{
		{skill: "bad-json", setup: func(t *testing.T, dir, skill string, bin []byte) {
			writeM(t, dir, []byte("{\n  \"manifest_version\": 1,\n  oops\n}"))
		}, state: "invalid", says: "invalid JSON at line 3"},
		{skill: "too-big", setup: func(t *testing.T, dir, skill string, bin []byte) {
			writeM(t, dir, manifestFor(skill, filepath.Base(dir), bin, func(m map[string]any) { m["author"] = strings.Repeat("a", 70<<10) }))
		}, state: "invalid", says: "over the 65536-byte limit"},
		{skill: "deep", setup: func(t *testing.T, dir, skill string, bin []byte) {
			writeM(t, dir, []byte(`{"tags":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}`))
		}, state: "invalid", says: "nested more than 32 levels"},
		{skill: "wrong-types", setup: edit(func(m map[string]any) {
			m["manifest_version"] = "1"
			m["tags"] = "math"
			m["limits"] = map[string]any{"timeout_ms": "30s", "memory_mb": -1}
		}), state: "invalid", says: "must be an integer"},
		{skill: "unknown-field", setup: edit(func(m map[string]any) { m["entry_point"] = "skill" }),
			state: "invalid", says: `unknown field; did you mean "entrypoint"?`},
		{skill: "dotdot", setup: edit(func(m map[string]any) { m["entrypoint"] = "../../good/1.0.0/skill" }),
			state: "invalid", says: "escapes the version folder"},
		{skill: "absolute", setup: edit(func(m map[string]any) { m["entrypoint"] = "/bin/true" }),
			state: "invalid", says: "absolute path"},
		{skill: "symlink-out", setup: func(t *testing.T, dir, skill string, bin []byte) {
			os.Remove(filepath.Join(dir, "skill"))
			os.Symlink("/bin/true", filepath.Join(dir, "skill"))
		}, state: "invalid", says: "escapes the version folder"},
		{skill: "symlink-loop", setup: func(t *testing.T, dir, skill string, bin []byte) {
			os.Remove(filepath.Join(dir, "skill"))
			os.Symlink("loop", filepath.Join(dir, "skill"))
			os.Symlink("skill", filepath.Join(dir, "loop"))
		}, state: "invalid", says: "symlink loop"},
		{skill: "not-exec", setup: func(t *testing.T, dir, skill string, bin []byte) { os.Chmod(filepath.Join(dir, "skill"), 0o644) },
			state: "invalid", says: "not executable"},
		{skill: "foreign-elf", setup: func(t *testing.T, dir, skill string, bin []byte) { entry(t, dir, skill, foreignELF(), 0o755) },
			state: "invalid", says: "rebuild it with GOARCH="},
		{skill: "no-interp", setup: func(t *testing.T, dir, skill string, bin []byte) {
			entry(t, dir, skill, []byte("#!/opt/nowhere/python9\nprint('hi')\n"), 0o755)
		}, state: "invalid", says: "does not exist on this host"},
		{skill: "no-shebang", setup: func(t *testing.T, dir, skill string, bin []byte) {
			entry(t, dir, skill, []byte("echo I am a script without an interpreter line\n"), 0o755)
		}, state: "invalid", says: "neither an ELF executable nor"},
		{skill: "not-semver", version: "latest", state: "invalid", says: "not a strict semantic version"},
		{skill: "not-semver-v", version: "v1.0.0", state: "invalid", says: "not a strict semantic version"},
		{skill: "twins", version: "1.0.0", state: "invalid", says: "same semver precedence"},
		{skill: "twins", version: "1.0.0+build.7", state: "invalid", says: "same semver precedence"},
		{skill: "half-copy", setup: func(t *testing.T, dir, skill string, bin []byte) {
			writeFile(t, filepath.Join(dir, "skill"), bin[:len(bin)/2], 0o755)
		}, state: "incomplete", says: "sha256 mismatch"},
		{skill: "truncated", setup: func(t *testing.T, dir, skill string, bin []byte) {
			b := manifestFor(skill, filepath.Base(dir), bin, nil)
			writeM(t, dir, b[:len(b)/2])
		}, state: "incomplete", says: "ends early"},
	}
}

// TestBadManifests puts every kind of broken version folder beside a good
// skill. The daemon and `host validate` both give each its reason, and the
// good skill serves throughout, also while broken folders keep arriving.
func TestBadManifests(t *testing.T) {
	t.Parallel()
	bin, err := os.ReadFile(skillBin)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	cases := badManifestCases()
	for _, c := range cases {
		if c.version == "" {
			c.version = "1.0.0"
		}
		dir := filepath.Join(tree, c.skill, c.version)
		writeFile(t, filepath.Join(dir, "skill"), bin, 0o755)
		writeFile(t, filepath.Join(dir, "manifest.json"), manifestFor(c.skill, c.version, bin, nil), 0o644)
		if c.setup != nil {
			c.setup(t, dir, c.skill, bin)
		}
	}
	h := startHost(t, tree, hostOpts{})
	h.wantCall("good.echo", `{}`, 200, "")

	out, _ := exec.Command(hostBin, "validate", tree).CombinedOutput()
	validate := string(out)
	for _, c := range cases {
		version := c.version
		if version == "" {
			version = "1.0.0"
		}
		s := h.skill(c.skill)
		v, ok := s.version(version)
		if !ok || v.State != c.state || !strings.Contains(v.reason(), c.says) || s.Active != "" {
			t.Errorf("%s@%s: %s (active %q), want %s saying %q", c.skill, version, v.reason(), s.Active, c.state, c.says)
		}
		for _, p := range v.Problems {
			if p.Path == "" || p.Message == "" {
				t.Errorf("%s@%s: a problem without path or message: %+v", c.skill, version, p)
			}
		}
		// host validate prints the folder with its status and problems.
		block := validateBlock(validate, c.skill+"@"+version)
		if !strings.HasPrefix(block, c.state) || !strings.Contains(block, c.says) {
			t.Errorf("host validate on %s@%s:\n%s\nwant %s saying %q", c.skill, version, block, c.state, c.says)
		}
		// ... and for the single folder (the skill folder for twins, which
		// only side by side are wrong), exits non-zero.
		path := filepath.Join(tree, c.skill, version)
		if c.skill == "twins" {
			path = filepath.Dir(path)
		}
		cmd := exec.Command(hostBin, "validate", path)
		if b, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("host validate %s@%s exited 0:\n%s", c.skill, version, b)
		}
		h.wantCall(c.skill+".echo", `{}`, 404, "unknown_tool")
	}
	if !strings.Contains(validate, "ok          good@1.0.0") {
		t.Errorf("host validate does not pass the good skill:\n%s", validate)
	}

	// While serving: a stream of broken new versions of the good skill
	// never displaces it.
	want := map[string]badManifestCase{} // version folder -> the case it holds
	for i, c := range cases {
		if c.setup == nil || c.skill == "twins" {
			continue
		}
		version := fmt.Sprintf("2.0.%d", i)
		want[version] = c
		dir := filepath.Join(t.TempDir(), version)
		writeFile(t, filepath.Join(dir, "skill"), bin, 0o755)
		writeFile(t, filepath.Join(dir, "manifest.json"), manifestFor("good", version, bin, nil), 0o644)
		c.setup(t, dir, "good", bin)
		if err := os.Rename(dir, filepath.Join(tree, "good", version)); err != nil {
			t.Fatal(err)
		}
		h.wantCall("good.echo", `{}`, 200, "")
	}
	// The watcher has seen every new folder once each is listed in the state
	// its case leads to (a positive signal: no guess at the debounce).
	s := h.waitSkill("good", 10*time.Second, "every broken 2.0.x listed as invalid or incomplete", func(s skillView) bool {
		for version, c := range want {
			if v, ok := s.version(version); !ok || v.State != c.state {
				return false
			}
		}
		return true
	})
	if s.Active != "1.0.0" {
		t.Errorf("a broken version displaced the good one: active %q", s.Active)
	}
	for version, c := range want {
		if v, _ := s.version(version); !strings.Contains(v.reason(), c.says) {
			t.Errorf("good@%s (%s): %s, want it to say %q", version, c.skill, v.reason(), c.says)
		}
	}
	var resp struct{ Result struct{ Version string } }
	json.Unmarshal(h.wantCall("good.echo", `{}`, 200, ""), &resp)
	if resp.Result.Version != "1.0.0" {
		t.Errorf("good.echo served by %q", resp.Result.Version)
	}
}

// validateBlock returns the status line (without the status column's
// padding) and the problem lines `host validate` printed for skill@version.
func validateBlock(out, id string) string {
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, " ") {
			f := strings.Fields(line)
			in = len(f) >= 2 && f[1] == id
			if in {
				b.WriteString(f[0] + "\n")
			}
			continue
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestBadHTTPInput sends what a careless or hostile client sends. Every
// answer is the one error shape with the right status (or a result), in
// valid UTF-8, and the daemon keeps serving.
func TestBadHTTPInput(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	h := startHost(t, tree, hostOpts{})
	raw := func(method, path, ctype string, body []byte) (int, []byte) {
		req, err := http.NewRequest(method, h.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return resp.StatusCode, buf.Bytes()
	}
	deepArgs := `{"arguments":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	cases := []struct {
		what, method, path, ctype, body string
		status                          int
		code                            string
	}{
		{"invalid UTF-8 in an argument", "POST", "/v1/tools/good.echo/invoke", "application/json", "{\"arguments\":{\"msg\":\"\xff\xfe\xc0\xaf\"}}", 200, ""},
		{"invalid UTF-8 in a key", "POST", "/v1/tools/good.echo/invoke", "application/json", "{\"arguments\":{\"\xff\":1}}", 400, "invalid_arguments"},
		{"invalid UTF-8 in the tool name", "POST", "/v1/tools/good.%FF%FE/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"NUL in the tool name", "POST", "/v1/tools/good.echo%00/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"encoded slash", "POST", "/v1/tools/good.echo%2F..%2F..%2Fhealthz/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"dotted name", "POST", "/v1/tools/good..echo/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"upper case", "POST", "/v1/tools/GOOD.ECHO/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"fullwidth letters", "POST", "/v1/tools/%EF%BD%87ood.echo/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"100 KB tool name", "POST", "/v1/tools/" + strings.Repeat("a", 100<<10) + ".echo/invoke", "application/json", `{"arguments":{}}`, 404, "unknown_tool"},
		{"trailing slash", "POST", "/v1/tools/good.echo/invoke/", "application/json", `{"arguments":{}}`, 404, "not_found"},
		{"GET on invoke", "GET", "/v1/tools/good.echo/invoke", "", "", 405, "method_not_allowed"},
		{"form body", "POST", "/v1/tools/good.echo/invoke", "application/x-www-form-urlencoded", "arguments=1", 400, "bad_request"},
		{"multipart body", "POST", "/v1/tools/good.echo/invoke", "multipart/form-data; boundary=x", "--x--", 400, "bad_request"},
		{"garbage content type", "POST", "/v1/tools/good.echo/invoke", ";;; not a media type", `{"arguments":{}}`, 400, "bad_request"},
		{"arguments not an object", "POST", "/v1/tools/good.echo/invoke", "application/json", `{"arguments":"hi"}`, 400, "invalid_arguments"},
		{"arguments a number", "POST", "/v1/tools/good.echo/invoke", "application/json", `{"arguments":1e999}`, 400, "invalid_arguments"},
		{"body a bare array", "POST", "/v1/tools/good.echo/invoke", "application/json", `[]`, 400, "bad_request"},
		{"body not JSON", "POST", "/v1/tools/good.echo/invoke", "application/json", "\x00\x01\x02", 400, "bad_request"},
		{"envelope field of the wrong type", "PUT", "/v1/skills/good/pin", "application/json", `{"version":1}`, 400, "bad_request"},
		{"100,000 levels deep", "POST", "/v1/tools/good.echo/invoke", "application/json", deepArgs, 400, "bad_request"},
		{"65 levels deep", "POST", "/v1/tools/good.echo/invoke", "application/json", `{"arguments":{"msg":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}}`, 400, "invalid_arguments"},
		{"pin body over the limit", "PUT", "/v1/skills/good/pin", "application/json", `{"version":"` + strings.Repeat("1", 2<<20) + `"}`, 413, "request_too_large"},
		{"1 MiB of keys", "POST", "/v1/tools/good.echo/invoke", "application/json", `{"arguments":{` + manyKeys(1<<20-100) + `}}`, 400, "invalid_arguments"},
		{"rescan with a body", "POST", "/v1/rescan", "text/plain", "please", 200, ""},
	}
	for _, c := range cases {
		start := time.Now()
		status, body := raw(c.method, c.path, c.ctype, []byte(c.body))
		took := time.Since(start)
		if !utf8.Valid(body) {
			t.Errorf("%s: answer is not valid UTF-8: %q", c.what, body)
		}
		code, msg, isErr := errorOf(body)
		switch {
		case c.code == "" && status != c.status:
			t.Errorf("%s: %d %.300s, want %d", c.what, status, body, c.status)
		case c.code != "" && (!isErr || code != c.code || status != c.status):
			t.Errorf("%s: %d %.300s, want %d %s in the error shape", c.what, status, body, c.status, c.code)
		case took > 15*time.Second: // a hang or a blow-up, not speed: a loaded 2-core CI machine took 8.5 s once for 1 MiB of keys
			t.Errorf("%s: took %v", c.what, took)
		default:
			if len(msg) > 120 {
				msg = msg[:120] + "…"
			}
			t.Logf("%-32s %d %-18s %s", c.what, status, code, msg)
		}
	}
	h.wantCall("good.echo", `{"msg":"after the bad input"}`, 200, "")
	if code, _ := h.must("GET", "/healthz", nil); code != 200 {
		t.Fatalf("healthz %d after bad input", code)
	}
}

func manyKeys(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(strconv.Itoa(i))
		b.WriteString(`":0`)
	}
	return b.String()
}

// TestSlowClients shows the daemon cutting off a client that sends its
// headers a byte at a time (ReadHeaderTimeout, 10 s in cmd/host/serve.go,
// not configurable, so this test takes about 10 s; it runs in parallel), and
// serving other clients meanwhile.
// TestSlowBody: a client that sends its headers, then its body a byte every
// 200 ms, is cut off at --read-timeout, and is answered in the one error
// shape if it is answered at all; other clients are served meanwhile.
func TestSlowBody(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	h := startHost(t, tree, hostOpts{args: []string{"--read-timeout", "2s"}})
	c, err := net.Dial("tcp", h.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/tools/good.echo/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"arguments\":{\"msg\":\"")
	answer := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c) // until the server closes the connection
		answer <- b
	}()
	var got []byte
dribble:
	for time.Since(start) < 20*time.Second {
		select {
		case got = <-answer:
			break dribble
		case <-time.After(200 * time.Millisecond):
			c.Write([]byte("x"))
		}
	}
	took := time.Since(start)
	if took < 1900*time.Millisecond || took > 6*time.Second {
		t.Fatalf("a body sent a byte every 200ms was cut off after %v, want about the 2s --read-timeout", took)
	}
	if len(got) > 0 {
		resp := string(got)
		if !strings.HasPrefix(resp, "HTTP/1.1 400") || !strings.Contains(resp, `{"error":{"code":"bad_request"`) || !strings.Contains(resp, "read timeout") {
			t.Fatalf("answer to the slow body: %q", resp)
		}
	}
	t.Logf("slow body cut off after %v; answer: %q", took.Round(time.Millisecond), got)
	h.wantCall("good.echo", `{}`, 200, "")
}

func TestSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s ReadHeaderTimeout")
	}
	t.Parallel()
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	h := startHost(t, tree, hostOpts{})
	const slowlorises = 20
	type result struct {
		took time.Duration
		sent int
		err  error
	}
	results := make(chan result, slowlorises)
	for i := 0; i < slowlorises; i++ {
		go func() {
			c, err := net.Dial("tcp", h.Addr)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer c.Close()
			start := time.Now()
			head := "POST /v1/tools/good.echo/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
			sent := 0
			// Detect the server closing the connection while we dribble.
			closed := make(chan struct{})
			go func() {
				buf := make([]byte, 512)
				for {
					if _, err := c.Read(buf); err != nil {
						close(closed)
						return
					}
				}
			}()
			for i := 0; ; i++ {
				b := byte('a' + i%26)
				if i < len(head) {
					b = head[i]
				}
				if _, err := c.Write([]byte{b}); err != nil {
					break
				}
				sent++
				select {
				case <-closed:
					results <- result{took: time.Since(start), sent: sent}
					return
				case <-time.After(200 * time.Millisecond):
				}
				if time.Since(start) > 30*time.Second {
					results <- result{took: time.Since(start), sent: sent, err: os.ErrDeadlineExceeded}
					return
				}
			}
			<-closed
			results <- result{took: time.Since(start), sent: sent}
		}()
	}
	// Meanwhile normal clients are served.
	time.Sleep(time.Second)
	for i := 0; i < 5; i++ {
		h.wantCall("good.echo", `{}`, 200, "")
	}
	for i := 0; i < slowlorises; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("slow client: %v after %v and %d bytes", r.err, r.took, r.sent)
		}
		if r.took < 9*time.Second || r.took > 15*time.Second {
			t.Errorf("slow client cut off after %v, want about the 10s ReadHeaderTimeout", r.took)
		}
		if i == 0 {
			t.Logf("a client sending its headers a byte every 200ms was cut off after %v (%d bytes sent)", r.took.Round(time.Millisecond), r.sent)
		}
	}
	h.wantCall("good.echo", `{}`, 200, "")
}
