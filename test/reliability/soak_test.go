//go:build linux

package reliability

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// soakDuration is SOAK_DURATION, or 30 s (10 s with -short).
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", v, err)
		}
		return d
	}
	if testing.Short() {
		return 10 * time.Second
	}
	return 30 * time.Second
}

const (
	soakCallers  = 16
	soakSkillMS  = 5000             // every soak skill's timeout_ms
	soakClientTO = 30 * time.Second // a call slower than this hung
)

// steady only ever gets swapped and killed: its calls may fail only with
// skill_crashed or skill_unavailable, never unknown_tool.
var soakSkills = []string{"steady", "alpha", "beta", "gamma"}

// soakStats is what the soak counts; mu guards every field.
type soakStats struct {
	mu        sync.Mutex
	calls     int
	byCode    map[string]int           // "ok" or the error code
	maxByCode map[string]time.Duration // slowest answer per code
	faults    map[string]int
	faultErrs map[string]int // faults that could not be injected (nothing to act on)
	bad       []string       // invariant violations, first few
	badCount  int
	hung      int
}

func (s *soakStats) call(code string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.byCode[code]++
	if d > s.maxByCode[code] {
		s.maxByCode[code] = d
	}
}

func (s *soakStats) violation(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.badCount++
	if len(s.bad) < 20 {
		s.bad = append(s.bad, fmt.Sprintf(format, args...))
	}
}

func (s *soakStats) fault(kind string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.faults[kind]++
	} else {
		s.faultErrs[kind]++
	}
}

// documentedCodes are the codes of pkg/registry/errors.go a call may get.
var documentedCodes = map[string]bool{
	"unknown_tool": true, "invalid_arguments": true, "request_too_large": true, "overloaded": true,
	"skill_unavailable": true, "timeout": true, "tool_error": true, "skill_crashed": true,
	"response_too_large": true, "invalid_response": true, "canceled": true,
}

// allowed is what a soak call may answer: the faults explain these codes.
func allowed(skill, tool, code string) bool {
	switch code {
	case "ok":
		return tool != "fail"
	case "tool_error":
		return tool == "fail" // the tool's own refusal
	case "skill_unavailable", "skill_crashed":
		return true // kill -9: the call was in flight, or the skill is restarting
	case "unknown_tool":
		return skill != "steady" // disabled, or every version deleted or corrupted
	}
	return false
}

// TestChaosSoak runs 16 callers against a real daemon while faults land at
// random: kill -9 of skill processes, new versions swapped in, versions
// deleted, half-copied binaries, corrupt manifests, disable and enable,
// SIGHUP. At the end it checks and reports: every call answered within its
// timeout with a documented code the faults explain, none hung, no process,
// goroutine or descriptor leaked, memory stayed bounded, and the final state
// equals the tree.
func TestChaosSoak(t *testing.T) {
	dur := soakDuration(t)
	tree := t.TempDir()
	limits := map[string]any{"timeout_ms": soakSkillMS}
	var nextPatch atomic.Int64
	newVersion := func() string { return fmt.Sprintf("1.0.%d", nextPatch.Add(1)) }
	for _, s := range soakSkills {
		install(t, tree, s, newVersion(), "", nil, limits)
	}
	h := startHost(t, tree, hostOpts{args: []string{"--grace", "1s", "--log-level", "info"}})
	hostPID := h.pid()
	callClient := &http.Client{Timeout: soakClientTO, Transport: &http.Transport{MaxIdleConnsPerHost: soakCallers}}
	defer callClient.CloseIdleConnections()

	// Warm up, then take the baseline with idle connections closed.
	for _, s := range soakSkills {
		h.wantCall(s+".echo", `{}`, 200, "")
	}
	settle := func() {
		callClient.CloseIdleConnections()
		h.client.CloseIdleConnections()
		time.Sleep(300 * time.Millisecond)
	}
	settle()
	m0 := h.metrics()
	before := m0["go_goroutines"]
	callsBefore := sumPrefix(m0, "skillhost_calls_total,")
	fdBefore := fdCount(hostPID)
	procsBefore := len(testenv.SkillProcesses(hostPID))
	rssStart := procStatus(hostPID, "VmRSS")

	st := &soakStats{byCode: map[string]int{}, maxByCode: map[string]time.Duration{}, faults: map[string]int{}, faultErrs: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup

	// Callers.
	for i := 0; i < soakCallers; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 99))
			for {
				select {
				case <-stop:
					return
				default:
				}
				skill := soakSkills[rng.IntN(len(soakSkills))]
				tool, args := "echo", `{"msg":"soak"}`
				switch r := rng.IntN(100); {
				case r < 15:
					tool, args = "sleep", fmt.Sprintf(`{"ms":%d}`, rng.IntN(150))
				case r < 18:
					tool, args = "fail", `{}`
				}
				soakCall(st, callClient, h.URL, skill, tool, args)
			}
		}(uint64(i))
	}

	// Memory sampler.
	var rssMax atomic.Int64
	rssMax.Store(rssStart)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if r := procStatus(hostPID, "VmRSS"); r > rssMax.Load() {
					rssMax.Store(r)
				}
			}
		}
	}()

	// Faults.
	bin, err := os.ReadFile(skillBin)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := testenv.SHA256File(skillBin)
	fi := &faultInjector{t: t, h: h, tree: tree, bin: bin, sum: sum, limits: limits, newVersion: newVersion,
		disabled: map[string]bool{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
	t.Logf("soak: %d callers for %v (SOAK_DURATION to change)", soakCallers, dur)
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		kind, ok := fi.inject()
		st.fault(kind, ok)
		time.Sleep(time.Duration(100+fi.rng.IntN(300)) * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	// Restore: enable everything, give every skill a fresh good version,
	// and let the host settle.
	for s := range fi.disabled {
		if code, body := h.must("POST", "/v1/skills/"+s+"/enable", nil); code != 200 {
			t.Errorf("enable %s: %d %s", s, code, body)
		}
	}
	for _, s := range soakSkills {
		install(t, tree, s, newVersion(), "", nil, limits)
	}
	final, converged := waitConverged(t, h, 60*time.Second)
	time.Sleep(1500 * time.Millisecond) // the 1 s grace of the last drains
	settle()
	m1 := h.metrics()
	after := m1["go_goroutines"]
	counted := sumPrefix(m1, "skillhost_calls_total,") - callsBefore
	fdAfter := fdCount(hostPID)
	procsAfter := testenv.SkillProcesses(hostPID)
	rssEnd := procStatus(hostPID, "VmRSS")

	// Invariants.
	if !converged {
		t.Errorf("final state differs from the tree: %s", final)
	}
	for _, s := range soakSkills {
		h.wantCall(s+".echo", `{}`, 200, "")
	}
	checkOnlyActive(t, h)
	if len(procsAfter) != len(soakSkills) {
		t.Errorf("%d processes under the host after the soak (%v), want %d", len(procsAfter), procsAfter, len(soakSkills))
	}
	const goroutineSlack, fdSlack = 25, 8
	if after > before+goroutineSlack {
		t.Errorf("host goroutines %v before, %v after: leak", before, after)
	}
	if fdAfter > fdBefore+fdSlack {
		t.Errorf("host fds %d before, %d after: leak", fdBefore, fdAfter)
	}
	const rssBound = 256 << 10 // kB over the start
	if rssMax.Load() > rssStart+rssBound {
		t.Errorf("host RSS grew from %d kB to %d kB", rssStart, rssMax.Load())
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.hung > 0 {
		t.Errorf("%d calls hung past the %v client timeout", st.hung, soakClientTO)
	}
	if st.badCount > 0 {
		t.Errorf("%d calls broke the invariants; first ones:\n  %s", st.badCount, strings.Join(st.bad, "\n  "))
	}
	if int(counted) != st.calls {
		t.Errorf("the host counted %v calls in skillhost_calls_total, the callers made %d", counted, st.calls)
	}
	if st.calls < 100 {
		t.Errorf("only %d calls made", st.calls)
	}

	// Report.
	var b strings.Builder
	fmt.Fprintf(&b, "| chaos soak | |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("duration", dur)
	row("callers", soakCallers)
	row("calls", st.calls)
	for _, c := range slices.Sorted(maps.Keys(st.byCode)) {
		row("answer "+c, fmt.Sprintf("%d (slowest %v)", st.byCode[c], st.maxByCode[c].Round(time.Millisecond)))
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(st.faults)) {
		row("fault "+k, st.faults[k])
		total += st.faults[k]
	}
	row("faults injected", total)
	for _, k := range slices.Sorted(maps.Keys(st.faultErrs)) {
		row("fault skipped "+k+" (nothing to act on)", st.faultErrs[k])
	}
	row("calls counted by the host (skillhost_calls_total)", counted)
	row("invariant violations", st.badCount)
	row("hung calls", st.hung)
	row("host goroutines before → after", fmt.Sprintf("%v → %v", before, after))
	row("host fds before → after", fmt.Sprintf("%d → %d", fdBefore, fdAfter))
	row("skill processes before → after", fmt.Sprintf("%d → %d", procsBefore, len(procsAfter)))
	row("host VmRSS start / max / end (MiB)", fmt.Sprintf("%.1f / %.1f / %.1f", float64(rssStart)/1024, float64(rssMax.Load())/1024, float64(rssEnd)/1024))
	row("final state equals the tree", converged)
	t.Logf("\n%s", b.String())
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Errorf("SOAK_REPORT: %v", err)
		}
	}
}

// soakCall makes one call and checks its answer.
func soakCall(st *soakStats, c *http.Client, base, skill, tool, args string) {
	start := time.Now()
	resp, err := c.Post(base+"/v1/tools/"+skill+"."+tool+"/invoke", "application/json", strings.NewReader(`{"arguments":`+args+`}`))
	d := time.Since(start)
	if err != nil {
		if d >= soakClientTO-time.Second {
			st.mu.Lock()
			st.hung++
			st.mu.Unlock()
		}
		st.call("transport_error", d)
		st.violation("%s.%s: transport error after %v: %v", skill, tool, d, err)
		return
	}
	var body struct {
		Result  json.RawMessage `json:"result"`
		Version string          `json:"version"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(resp.Body)
	derr := dec.Decode(&body)
	resp.Body.Close()
	code := "ok"
	switch {
	case derr != nil:
		code = "unreadable"
		st.violation("%s.%s: %d with an unreadable body: %v", skill, tool, resp.StatusCode, derr)
	case resp.StatusCode == 200:
		if len(body.Result) == 0 || body.Error != nil {
			st.violation("%s.%s: 200 without a result", skill, tool)
		}
	case body.Error == nil || body.Error.Code == "" || body.Error.Message == "":
		code = "no_error_shape"
		st.violation("%s.%s: %d not in the error shape", skill, tool, resp.StatusCode)
	default:
		code = body.Error.Code
		if !documentedCodes[code] {
			st.violation("%s.%s: undocumented code %s: %s", skill, tool, code, body.Error.Message)
		}
	}
	if code == "skill_unavailable" && (strings.Contains(body.Error.Message, "being replaced") || strings.Contains(body.Error.Message, "retired")) {
		// Only a swap says this; a swap must lose no call this short.
		st.violation("%s.%s: a swap lost the call after %v: %s", skill, tool, d.Round(time.Millisecond), body.Error.Message)
	}
	if code != "unreadable" && code != "no_error_shape" && !allowed(skill, tool, code) {
		msg := ""
		if body.Error != nil {
			msg = body.Error.Message
		}
		st.violation("%s.%s: %s after %v is not explained by the faults: %s", skill, tool, code, d.Round(time.Millisecond), msg)
	}
	// A documented bound: the skill's timeout plus the lease retries of a
	// swap (at most 8 waits of a second) and the crash confirmation.
	if d > time.Duration(soakSkillMS)*time.Millisecond+10*time.Second {
		st.violation("%s.%s: %s after %v, over the call's bound", skill, tool, code, d)
	}
	st.call(code, d)
}

// faultInjector changes the tree and the host at random.
type faultInjector struct {
	t          *testing.T
	h          *host
	tree       string
	bin        []byte
	sum        string
	limits     map[string]any
	newVersion func() string
	rng        *rand.Rand
	disabled   map[string]bool
	halfCopies []string // version folders with half a binary, completable
}

// faultKinds weighs the faults: kills and swaps, which every skill gets,
// come three times as often as the rest, which take a chaotic skill out of
// service for a while.
var faultKinds = []string{"kill9", "kill9", "kill9", "swap", "swap", "swap",
	"delete", "halfcopy", "complete", "corrupt", "disable", "sighup"}

func (f *faultInjector) inject() (string, bool) {
	kind := faultKinds[f.rng.IntN(len(faultKinds))]
	return kind, f.apply(kind)
}

// chaotic is a random skill other than steady.
func (f *faultInjector) chaotic() string { return soakSkills[1+f.rng.IntN(len(soakSkills)-1)] }

func (f *faultInjector) apply(kind string) bool {
	switch kind {
	case "kill9":
		skill := soakSkills[f.rng.IntN(len(soakSkills))]
		code, body, err := f.h.do("GET", "/v1/skills/"+skill, nil)
		var s skillView
		if err != nil || code != 200 || json.Unmarshal(body, &s) != nil {
			return false
		}
		v, ok := s.version(s.Active)
		if !ok || v.PID == 0 {
			return false
		}
		return syscall.Kill(v.PID, syscall.SIGKILL) == nil
	case "swap":
		skill := soakSkills[f.rng.IntN(len(soakSkills))]
		_, err := testenv.Install(f.tree, testenv.Version{Skill: skill, Version: f.newVersion(), Binary: skillBin, Limits: f.limits})
		return err == nil
	case "delete":
		// Any version of a chaotic skill; of steady only one that is not
		// its newest, so steady always has a version to serve.
		skill := soakSkills[f.rng.IntN(len(soakSkills))]
		vs := f.versions(skill)
		if skill == "steady" {
			if len(vs) < 2 {
				return false
			}
			vs = vs[:len(vs)-1]
		}
		if len(vs) == 0 {
			return false
		}
		return os.RemoveAll(filepath.Join(f.tree, skill, vs[f.rng.IntN(len(vs))])) == nil
	case "halfcopy":
		skill, version := f.chaotic(), f.newVersion()
		dir := filepath.Join(f.tree, skill, version)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false
		}
		v := testenv.Version{Skill: skill, Version: version, Limits: f.limits}
		os.WriteFile(filepath.Join(dir, "manifest.json"), v.Manifest(f.sum), 0o644)
		os.WriteFile(filepath.Join(dir, "skill"), f.bin[:len(f.bin)/2], 0o755)
		f.halfCopies = append(f.halfCopies, dir)
		return true
	case "complete":
		if len(f.halfCopies) == 0 {
			return false
		}
		i := f.rng.IntN(len(f.halfCopies))
		dir := f.halfCopies[i]
		f.halfCopies = append(f.halfCopies[:i], f.halfCopies[i+1:]...)
		fh, err := os.OpenFile(filepath.Join(dir, "skill"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return false // deleted meanwhile
		}
		_, err = fh.Write(f.bin[len(f.bin)/2:])
		fh.Close()
		return err == nil
	case "corrupt":
		skill := f.chaotic()
		vs := f.versions(skill)
		if f.rng.IntN(2) == 0 || len(vs) == 0 {
			dir := filepath.Join(f.tree, skill, f.newVersion())
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "skill"), f.bin[:1024], 0o755)
			return os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"manifest_version":1,"name":`), 0o644) == nil
		}
		junk := [][]byte{[]byte("{not json"), []byte(`{"manifest_version":2}`), []byte(`[]`), {0xff, 0xfe, 0x00}}
		p := filepath.Join(f.tree, skill, vs[f.rng.IntN(len(vs))], "manifest.json")
		return os.WriteFile(p, junk[f.rng.IntN(len(junk))], 0o644) == nil
	case "disable":
		skill := f.chaotic()
		action := "disable"
		if f.disabled[skill] {
			action = "enable"
		}
		code, _, err := f.h.do("POST", "/v1/skills/"+skill+"/"+action, nil)
		if err != nil || code != 200 {
			return false
		}
		if action == "disable" {
			f.disabled[skill] = true
		} else {
			delete(f.disabled, skill)
		}
		return true
	case "sighup":
		return f.h.Cmd.Process.Signal(syscall.SIGHUP) == nil
	}
	return false
}

// versions lists a skill's version folders, oldest first by semver.
func (f *faultInjector) versions(skill string) []string {
	entries, _ := os.ReadDir(filepath.Join(f.tree, skill))
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	sort.Slice(out, func(i, j int) bool { return patch(out[i]) < patch(out[j]) })
	return out
}

func patch(v string) int {
	var a, b, c int
	fmt.Sscanf(v, "%d.%d.%d", &a, &b, &c)
	return c
}

// waitConverged waits until the host's state equals what the tree says it
// should be, rescanning meanwhile; it returns the last difference.
func waitConverged(t *testing.T, h *host, timeout time.Duration) (string, bool) {
	var diff string
	ok := testenv.WaitFor(timeout, func() bool {
		h.do("POST", "/v1/rescan", nil)
		diff = stateDiff(t, h)
		if diff != "" {
			time.Sleep(200 * time.Millisecond)
		}
		return diff == ""
	})
	return diff, ok
}

// stateDiff compares GET /v1/skills with a scan of the tree: the same
// version folders with the same verdicts, the newest valid version active
// (no skill is disabled or pinned at this point), nothing starting,
// draining, crashed or failed.
func stateDiff(t *testing.T, h *host) string {
	tree, err := manifest.Scan(h.tree, manifest.Options{StrictModes: true})
	if err != nil {
		return err.Error()
	}
	code, body, err := h.do("GET", "/v1/skills", nil)
	if err != nil || code != 200 {
		return fmt.Sprintf("GET /v1/skills: %d %v", code, err)
	}
	var got skillsBody
	json.Unmarshal(body, &got)
	status := map[string]skillView{}
	for _, s := range got.Skills {
		status[s.Name] = s
	}
	var diffs []string
	onDisk := map[string]map[string]manifest.Version{}
	for _, v := range tree.Versions {
		if onDisk[v.Skill] == nil {
			onDisk[v.Skill] = map[string]manifest.Version{}
		}
		onDisk[v.Skill][v.Version] = v
	}
	for skill, vs := range onDisk {
		s, ok := status[skill]
		if !ok {
			diffs = append(diffs, skill+": on disk, not in /v1/skills")
			continue
		}
		wantActive := ""
		if valid := tree.Valid(skill); len(valid) > 0 {
			wantActive = valid[0].Version
		}
		if s.Active != wantActive || s.Disabled || s.Pinned != "" {
			diffs = append(diffs, fmt.Sprintf("%s: active %q (disabled %v, pinned %q), want %q", skill, s.Active, s.Disabled, s.Pinned, wantActive))
		}
		if len(s.Versions) != len(vs) {
			diffs = append(diffs, fmt.Sprintf("%s: %d versions listed, %d on disk", skill, len(s.Versions), len(vs)))
		}
		for _, hv := range s.Versions {
			dv, ok := vs[hv.Version]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s@%s: listed (%s), not on disk", skill, hv.Version, hv.State))
				continue
			}
			var want []string
			switch dv.Status {
			case manifest.StatusValid:
				want = []string{"stopped"}
				if hv.Version == wantActive {
					want = []string{"active"}
				}
			case manifest.StatusInvalid:
				want = []string{"invalid"}
			case manifest.StatusIncomplete:
				want = []string{"incomplete"}
			}
			if !slices.Contains(want, hv.State) {
				diffs = append(diffs, fmt.Sprintf("%s@%s: %s, the tree says %v", skill, hv.Version, hv.reason(), want))
			}
		}
	}
	for name, s := range status {
		if _, ok := onDisk[name]; !ok && (s.Active != "" || len(s.Versions) > 0) {
			diffs = append(diffs, fmt.Sprintf("%s: not on disk, but %+v", name, s))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// sumPrefix adds every sample whose key starts with prefix.
func sumPrefix(m map[string]float64, prefix string) float64 {
	var n float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}
