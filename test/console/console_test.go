package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillhost/skillhost/internal/testenv"
)

var examplesActive = map[string]string{"calc": "1.0.0", "policy": "1.0.0", "policyassist": "1.0.0", "textkit": "1.0.0"}

// TestConsoleSkillsAndActions loads the page against the example skills,
// checks the table against the API, and disables and enables a skill from
// the page.
func TestConsoleSkillsAndActions(t *testing.T) {
	d := startDaemon(t, exampleTree(t), "")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(examplesActive)
	p.wait(10*time.Second, "the live stream", `document.getElementById('conn').dataset.state === 'live'`)

	// The table shows what the API says.
	var skills struct {
		Skills []struct {
			Name     string
			Versions []struct{ PID int }
		}
	}
	_, body := d.Do(t, "GET", "/v1/skills", nil)
	json.Unmarshal(body, &skills)
	for _, s := range skills.Skills {
		pid := eval[string](p, row(s.Name)+`.querySelector('td.pid').textContent`)
		if pid != strconv.Itoa(s.Versions[0].PID) {
			t.Errorf("%s: page shows pid %s, API %d", s.Name, pid, s.Versions[0].PID)
		}
		if up := eval[string](p, row(s.Name)+`.querySelector('td.uptime').textContent`); !regexp.MustCompile(`^\d+s$|^\d+m \d+s$`).MatchString(up) {
			t.Errorf("%s: uptime %q", s.Name, up)
		}
	}
	p.wait(10*time.Second, "the timeline lists the start-ups", `document.querySelectorAll('#timeline li[data-kind="up"]').length === 5`)
	p.wait(10*time.Second, "every tool listed", `document.querySelectorAll('#tool-list li[data-tool]').length === 10`)
	if s := eval[string](p, `document.getElementById('summary').textContent`); s != "5 skills · 10 tools" {
		t.Errorf("summary = %q", s)
	}
	if uses := eval[string](p, row("policyassist")+`.querySelector('td.name .uses').textContent`); uses != "calls calc.evaluate, policy.search_policies" {
		t.Errorf("policyassist's uses on the page: %q", uses)
	}
	p.screenshot("overview")

	// Disable textkit: its tools leave, its version drains and stops. The
	// other rows stay the same elements throughout (a click on them is never
	// lost to a re-render).
	p.do(5*time.Second, "watch calc's row", chromedp.Evaluate[chromedp.Void](`(() => {
		`+row("calc")+`.querySelector('button[data-action="disable"]').__kept = true;
		window.__calcDetached = 0;
		new MutationObserver((ms) => { for (const m of ms) for (const n of m.removedNodes) if (n.dataset?.skill === 'calc') window.__calcDetached++; })
			.observe(document.getElementById('skills-body'), { childList: true });
	})()`))
	p.do(10*time.Second, "click Disable", chromedp.Click(chromedp.CSS(`tr[data-skill="textkit"] button[data-action="disable"]`)))
	p.wait(20*time.Second, "textkit disabled", `(() => { const r = `+row("textkit")+`;
		return r.dataset.disabled === 'true' && r.dataset.active === '' && r.querySelector('.badge.s-disabled')
			&& r.querySelector('button[data-action="enable"]') && r.querySelector('td.others .version[data-version="1.0.0"]'); })()`)
	p.wait(10*time.Second, "textkit stopped", row("textkit")+`.querySelector('td.others .version[data-state="stopped"]')`)
	p.wait(10*time.Second, "textkit's tools gone from the list", `document.querySelectorAll('#tool-list li[data-tool]').length === 6 && !document.querySelector('#tool-list li[data-tool^="textkit."]')`)
	p.wait(10*time.Second, "the drain on the timeline", `document.querySelector('#timeline li[data-skill="textkit"][data-kind="drain"]')`)
	if !eval[bool](p, row("calc")+`.querySelector('button[data-action="disable"]').__kept === true`) {
		t.Error("calc's row was rebuilt while textkit changed")
	}
	if n := eval[int](p, `window.__calcDetached`); n != 0 {
		t.Errorf("calc's row was taken out of the page %d times while textkit changed", n)
	}
	if _, body := d.Do(t, "GET", "/v1/skills/textkit", nil); !strings.Contains(string(body), `"disabled":true`) {
		t.Errorf("the API does not show textkit disabled: %s", body)
	}
	p.screenshot("disabled")

	// Enable it again.
	p.do(10*time.Second, "click Enable", chromedp.Click(chromedp.CSS(`tr[data-skill="textkit"] button[data-action="enable"]`)))
	p.waitSkills(map[string]string{"textkit": "1.0.0"})
	p.wait(10*time.Second, "textkit enabled", row("textkit")+`.dataset.disabled === 'false' && !`+row("textkit")+`.querySelector('.badge.s-disabled')`)
	p.wait(10*time.Second, "textkit's tools back", `document.querySelectorAll('#tool-list li[data-tool^="textkit."]').length === 4`)

	// Rescan.
	p.do(10*time.Second, "click Rescan", chromedp.Click(chromedp.ID("rescan")))
	p.wait(20*time.Second, "the rescan done", `!document.getElementById('notice').hidden && document.getElementById('notice-text').textContent.includes('Rescanned')`)
}

// search types a query into the tool search box.
func (p *page) search(q string) {
	p.t.Helper()
	p.do(10*time.Second, "search "+q, clearInput("tool-q"), chromedp.SendKeys(chromedp.ID("tool-q"), q))
}

// clearInput empties an input's value. (chromedp.Clear sets the value
// attribute, which does not change what a user already typed.)
func clearInput(id string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).value = ''`, id))
}

// pick opens a tool from the list and waits for its form.
func (p *page) pick(tool string) {
	p.t.Helper()
	p.do(10*time.Second, "pick "+tool, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tool-list li[data-tool=%q] button`, tool))))
	p.wait(10*time.Second, tool+"'s form", fmt.Sprintf(`document.querySelector('#try-form[data-tool=%q]')`, tool))
}

// fill sets the form field of an argument (typing, for text and numbers).
func (p *page) fill(arg, value string) {
	p.t.Helper()
	sel := chromedp.ID("arg-" + arg)
	p.do(10*time.Second, "fill "+arg, clearInput("arg-"+arg), chromedp.SendKeys(sel, value))
}

// invoke submits the form and waits for a result or an error.
func (p *page) invoke() {
	p.t.Helper()
	p.do(10*time.Second, "click Invoke", chromedp.Evaluate[chromedp.Void](`document.getElementById('try-result').className = ''`),
		chromedp.Click(chromedp.CSS(`#try-form button[data-action="invoke"]`)))
	p.wait(20*time.Second, "the call's answer", `document.getElementById('try-result').classList.contains('result')`)
}

func (p *page) resultText() string {
	return eval[string](p, `document.getElementById('try-result').innerText`)
}

// TestConsoleTryTool runs tools from the forms their schemas generate: a
// string, an enum, a number and a boolean field; a good call, a refused one
// and a form error; and the calls column counts them.
func TestConsoleTryTool(t *testing.T) {
	d := startDaemon(t, exampleTree(t), "")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(examplesActive)

	p.search("evaluate an arithmetic expression")
	p.wait(10*time.Second, "calc.evaluate ranked first", `document.querySelector('#tool-list li[data-tool]')?.dataset.tool === 'calc.evaluate'
		&& document.querySelector('#tool-list li[data-tool] .badge.score')`)
	p.pick("calc.evaluate")
	if kinds := eval[string](p, `[...document.querySelectorAll('#try-form [data-field]')].map(f => f.dataset.field + ':' + f.querySelector('input,select,textarea').type).join(' ')`); kinds != "expression:text angle_unit:select-one" {
		t.Errorf("calc.evaluate form fields = %q", kinds)
	}
	if opts := eval[string](p, `[...document.querySelectorAll('#arg-angle_unit option')].map(o => o.value).join(',')`); opts != ",rad,deg" {
		t.Errorf("angle_unit options = %q (want the default, then rad, deg)", opts)
	}
	if !eval[bool](p, `document.querySelector('[data-field="expression"] .req') !== null && document.querySelector('[data-field="angle_unit"] .req') === null`) {
		t.Error("required marks wrong")
	}
	p.fill("expression", "(2+3)*4")
	p.invoke()
	if r := p.resultText(); !strings.Contains(r, `"result": 20`) || !strings.Contains(r, "calc 1.0.0") {
		t.Errorf("result of (2+3)*4:\n%s", r)
	}
	p.screenshot("evaluate")

	// The skill refuses: the error's code and message show.
	p.fill("expression", "(2+")
	p.invoke()
	if code := eval[string](p, `document.querySelector('#try-result.err .code')?.textContent || ''`); code != "tool_error" {
		t.Errorf("error code = %q\n%s", code, p.resultText())
	}
	if r := p.resultText(); !strings.Contains(r, "HTTP 422") || !strings.Contains(r, "calc.evaluate refused") || !strings.Contains(r, "invalid_expression") {
		t.Errorf("tool error shown as:\n%s", r)
	}
	p.screenshot("evaluate-error")
	// The page counted the calls it made (from /metrics, refetched after a call).
	p.wait(10*time.Second, "calc's calls counted", row("calc")+`.querySelector('td.calls').textContent === '2' && `+row("calc")+`.querySelector('td.errors').textContent === '1 (50.0%)'`)

	// Enum and number fields.
	p.search("convert 5 miles to km")
	p.wait(10*time.Second, "calc.convert_units listed", `document.querySelector('#tool-list li[data-tool="calc.convert_units"]')`)
	p.pick("calc.convert_units")
	p.fill("value", "5")
	p.do(10*time.Second, "choose units", chromedp.SetValue(chromedp.ID("arg-from"), "mi"), chromedp.SetValue(chromedp.ID("arg-to"), "km"))
	p.invoke()
	if r := p.resultText(); !strings.Contains(r, `"value": 8.04672`) || !strings.Contains(r, "5 mi = 8.04672 km") {
		t.Errorf("5 mi in km:\n%s", r)
	}
	// A number field refuses what is not a number before anything is sent.
	p.do(10*time.Second, "bad number", chromedp.Evaluate[chromedp.Void](`document.getElementById('arg-value').value = ''`))
	p.invoke()
	if code := eval[string](p, `document.querySelector('#try-result.err .code')?.textContent || ''`); code != "invalid_arguments" {
		t.Errorf("a missing required number: code %q\n%s", code, p.resultText())
	}

	// A boolean field, and Chinese through a form and back.
	p.search("slug")
	p.wait(10*time.Second, "textkit.slugify listed", `document.querySelector('#tool-list li[data-tool="textkit.slugify"]')`)
	p.pick("textkit.slugify")
	if typ := eval[string](p, `document.getElementById('arg-keep_cjk').type`); typ != "checkbox" {
		t.Errorf("keep_cjk is a %q, want a checkbox", typ)
	}
	p.fill("text", "Go 语言入门")
	p.do(10*time.Second, "tick keep_cjk", chromedp.Click(chromedp.ID("arg-keep_cjk")))
	p.invoke()
	if r := p.resultText(); !strings.Contains(r, `"slug": "go-语言入门"`) {
		t.Errorf("slug of Go 语言入门 with keep_cjk:\n%s", r)
	}
}

// TestConsoleChineseSearch searches in Chinese, sees the policy tool ranked
// with its score and tags, and renders a Chinese clause it returns.
func TestConsoleChineseSearch(t *testing.T) {
	d := startDaemon(t, exampleTree(t), "")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(examplesActive)
	p.search("查询报销制度")
	p.wait(10*time.Second, "policy.search_policies ranked first", `document.querySelector('#tool-list li[data-tool]')?.dataset.tool === 'policy.search_policies'`)
	first := eval[string](p, `document.querySelector('#tool-list li[data-tool]').innerText`)
	if !regexp.MustCompile(`score \d+\.\d\d`).MatchString(first) || !strings.Contains(first, "报销") || !strings.Contains(first, "规章制度") {
		t.Errorf("first hit shows no score or Chinese tags:\n%s", first)
	}
	// The score is the API's.
	var hits struct {
		Tools []struct {
			Name  string
			Score float64
		}
	}
	_, body := d.Do(t, "GET", "/v1/tools?q=%E6%9F%A5%E8%AF%A2%E6%8A%A5%E9%94%80%E5%88%B6%E5%BA%A6&limit=20", nil)
	json.Unmarshal(body, &hits)
	if len(hits.Tools) == 0 || !strings.Contains(first, fmt.Sprintf("score %.2f", hits.Tools[0].Score)) {
		t.Errorf("page hit %q does not show the API's score %+v", first, hits.Tools)
	}
	p.pick("policy.search_policies")
	if schema := eval[string](p, `document.querySelector('#tool-detail pre.schema').textContent`); !strings.Contains(schema, "住宿报销标准") {
		t.Errorf("the schema does not show its Chinese description:\n%s", schema)
	}
	p.fill("query", "住宿报销标准")
	p.fill("limit", "1")
	p.invoke()
	r := p.resultText()
	for _, want := range []string{"《差旅报销制度》第五条", "住宿费报销标准", "一线城市（北京、上海、广州、深圳）600 元"} {
		if !strings.Contains(r, want) {
			t.Errorf("result lacks %q:\n%s", want, r)
		}
	}
	if ff := eval[string](p, `getComputedStyle(document.querySelector('#try-result pre')).fontFamily`); !strings.Contains(ff, "Noto Sans CJK SC") || !strings.Contains(ff, "Microsoft YaHei") {
		t.Errorf("result font stack has no CJK faces: %s", ff)
	}
	p.screenshot("chinese")
}

// TestConsoleHotSwapLive keeps the page open while a new version of a skill
// lands in the tree: the table shows the new active version and the old one
// draining with a countdown, the timeline shows the swap, all without a
// reload. Then it pins and unpins from the page, and a crash and restart
// show on the timeline.
func TestConsoleHotSwapLive(t *testing.T) {
	tree := exampleTree(t)
	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, tree, "", "--grace", "30s")
	p := openPage(t, d.URL+"/ui/")
	all := map[string]string{"svc": "1.0.0"}
	for k, v := range examplesActive {
		all[k] = v
	}
	p.waitSkills(all)
	p.do(5*time.Second, "mark the document", chromedp.Evaluate[chromedp.Void](`window.__sameDocument = 'yes'`))

	// A few calls, so the calls and errors columns have something to show.
	for _, args := range []string{`{"expression":"1+1"}`, `{"expression":"2*21"}`, `{"expression":"sqrt(2)"}`, `{"expr":"1"}`} {
		d.Do(t, "POST", "/v1/tools/calc.evaluate/invoke", `{"arguments":`+args+`}`)
	}
	// Made by another client, with no lifecycle change to follow: the
	// daemon's "calls" pulse on /v1/events brings them to the page.
	p.wait(10*time.Second, "another client's calls counted live", row("calc")+`.querySelector('td.errors').textContent === '1 (25.0%)'`)

	// Hold a call on 1.0.0 so that it drains visibly after the swap.
	held := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", d.URL+"/v1/tools/svc.sleep/invoke", strings.NewReader(`{"arguments":{"ms":12000}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		held <- string(b)
	}()
	if !testenv.WaitFor(10*time.Second, func() bool {
		_, b := d.Do(t, "GET", "/v1/skills/svc", nil)
		return bytes.Contains(b, []byte(`"in_flight":1`))
	}) {
		t.Fatal("the held call never started")
	}

	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.1.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	p.waitSkills(map[string]string{"svc": "1.1.0"})
	p.wait(10*time.Second, "1.0.0 draining with a countdown", row("svc")+`.querySelector('td.others .version[data-version="1.0.0"][data-state="draining"] .countdown')`)
	p.wait(10*time.Second, "the swap on the timeline", `document.querySelector('#timeline li[data-kind="swap"][data-skill="svc"][data-version="1.1.0"]')?.innerText.includes('svc 1.0.0 → 1.1.0')`)
	if got := eval[string](p, `window.__sameDocument || 'reloaded'`); got != "yes" {
		t.Fatalf("the page reloaded (%s); the swap must show live", got)
	}
	if n := eval[string](p, row("svc")+`.querySelector('td.inflight').textContent`); n != "1" {
		t.Errorf("in-flight of svc = %s, want the held call", n)
	}
	countdown := func() int {
		s := eval[string](p, row("svc")+`.querySelector('.countdown')?.textContent || ''`)
		m := regexp.MustCompile(`^ends in (\d+)s$`).FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("countdown reads %q", s)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	c1 := countdown()
	if c1 < 15 || c1 > 30 {
		t.Errorf("countdown %ds, want about the 30s grace", c1)
	}

	// A Chinese answer in the tool panel, for the screenshot.
	p.search("查询报销制度")
	p.wait(10*time.Second, "the policy tool first", `document.querySelector('#tool-list li[data-tool]')?.dataset.tool === 'policy.search_policies'`)
	p.pick("policy.search_policies")
	p.fill("query", "住宿报销标准")
	p.fill("limit", "1")
	p.invoke()
	p.wait(10*time.Second, "calls counted", row("calc")+`.querySelector('td.errors').textContent === '1 (25.0%)'`)
	if !testenv.WaitFor(5*time.Second, func() bool { return countdown() < c1 }) {
		t.Errorf("the countdown does not move: %d, then %d", c1, countdown())
	}
	p.screenshot("hot-swap")
	if os.Getenv("CONSOLE_UPDATE_DOCS") != "" {
		// The README's picture: the schema folded so the answer shows.
		p.do(5*time.Second, "fold the schema", chromedp.Evaluate[chromedp.Void](`document.querySelector('#tool-detail details').open = false`))
		p.updateDocsScreenshot()
	}

	// The held call finishes on the old version, which then stops.
	select {
	case b := <-held:
		if !strings.Contains(b, `"version":"1.0.0"`) || !strings.Contains(b, `"msg":"slept"`) {
			t.Errorf("held call: %s", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held call never finished")
	}
	p.wait(10*time.Second, "1.0.0 stopped", row("svc")+`.querySelector('td.others .version[data-version="1.0.0"][data-state="stopped"]') && !`+row("svc")+`.querySelector('.countdown')`)
	p.wait(10*time.Second, "the stop on the timeline", `document.querySelector('#timeline li[data-kind="stop"][data-skill="svc"][data-version="1.0.0"]')`)

	// Pin 1.0.0 from the page, then unpin.
	p.do(10*time.Second, "choose 1.0.0 and pin", chromedp.Evaluate[chromedp.Void](`(() => { const s = `+row("svc")+`.querySelector('select[data-role="pin-version"]');
		s.value = '1.0.0'; s.dispatchEvent(new Event('change')); })()`),
		chromedp.Click(chromedp.CSS(`tr[data-skill="svc"] button[data-action="pin"]`)))
	p.waitSkills(map[string]string{"svc": "1.0.0"})
	p.wait(10*time.Second, "svc pinned", row("svc")+`.dataset.pinned === '1.0.0' && `+row("svc")+`.querySelector('.badge.s-pinned')?.textContent === 'pinned 1.0.0'`)
	p.wait(10*time.Second, "the swap back on the timeline", `document.querySelector('#timeline li[data-kind="swap"][data-skill="svc"][data-version="1.0.0"]')`)
	p.do(10*time.Second, "unpin", chromedp.Click(chromedp.CSS(`tr[data-skill="svc"] button[data-action="unpin"]`)))
	p.waitSkills(map[string]string{"svc": "1.1.0"})
	p.wait(10*time.Second, "svc unpinned", row("svc")+`.dataset.pinned === ''`)

	// A crash and the restart after it.
	if code, body := d.Do(t, "POST", "/v1/tools/svc.crash/invoke", `{"arguments":{}}`); code != 502 {
		t.Fatalf("crash: %d %s", code, body)
	}
	p.wait(10*time.Second, "the crash on the timeline", `document.querySelector('#timeline li[data-kind="crash"][data-skill="svc"]')`)
	p.wait(20*time.Second, "the restart on the timeline", `document.querySelector('#timeline li[data-kind="restart"][data-skill="svc"]')`)
	p.wait(10*time.Second, "one restart counted", row("svc")+`.querySelector('td.restarts').textContent === '1'`)
	if got := eval[string](p, `window.__sameDocument || 'reloaded'`); got != "yes" {
		t.Fatalf("the page reloaded (%s)", got)
	}
	p.screenshot("crash")
}

// TestConsoleShowsBrokenVersionsWithReasons: versions that failed, are
// invalid or are an incomplete copy are listed beside the serving one, each
// with its state and its reason, and one that arrives later shows up live.
func TestConsoleShowsBrokenVersionsWithReasons(t *testing.T) {
	tree := t.TempDir()
	for _, v := range []testenv.Version{
		{Skill: "svc", Version: "1.0.0", Binary: skillBin},
		{Skill: "svc", Version: "2.0.0", Binary: skillBin, Env: map[string]string{"TESTSKILL_MODE": "exit"}},
		{Skill: "svc", Version: "3.0.0", Binary: skillBin, SHA256: strings.Repeat("0", 64)},
	} {
		if _, err := testenv.Install(tree, v); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemon(t, tree, "", "--start-timeout", "60s")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(map[string]string{"svc": "1.0.0"})
	version := func(v, state, says string) string {
		return row("svc") + `.querySelector('td.others .version[data-version="` + v + `"][data-state="` + state + `"] .why')?.textContent.includes(` + strconv.Quote(says) + `)`
	}
	p.wait(10*time.Second, "2.0.0 failed, with why", version("2.0.0", "failed", "exiting at start"))
	p.wait(10*time.Second, "3.0.0 incomplete, with why", version("3.0.0", "incomplete", "sha256 mismatch"))

	// An invalid version (its binary not executable) is renamed in while the
	// page is open: it is never launched, and still shows up live.
	stage, err := testenv.Install(t.TempDir(), testenv.Version{Skill: "svc", Version: "4.0.0", Binary: skillBin})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(stage, "skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stage, filepath.Join(tree, "svc", "4.0.0")); err != nil {
		t.Fatal(err)
	}
	p.wait(10*time.Second, "4.0.0 invalid, with why", version("4.0.0", "invalid", "not executable"))
	p.wait(5*time.Second, "4.0.0 on the timeline", `document.querySelector('#timeline li[data-kind="fail"][data-skill="svc"][data-version="4.0.0"]') !== null`)

	// A skill whose first start hangs serves nothing yet: the Active column
	// shows the version starting, not "—" with the version among the others.
	if _, err := testenv.Install(tree, testenv.Version{Skill: "slow", Version: "1.0.0", Binary: skillBin, Env: map[string]string{"TESTSKILL_MODE": "nohandshake"}}); err != nil {
		t.Fatal(err)
	}
	p.wait(10*time.Second, "slow 1.0.0 starting in the Active column", `(() => { const r = `+row("slow")+`;
		return r && r.dataset.active === '' && r.querySelector('td.active .version[data-version="1.0.0"][data-state="starting"]')
			&& !r.querySelector('td.others .version') && r.querySelector('td.restarts').textContent === '0'; })()`)
	p.screenshot("broken-versions")
}

// TestConsoleTokenPrompt runs the daemon with --token-file: the page loads
// without the token, asks for it, refuses a wrong one, keeps the right one
// in the tab only and sends it on every call.
func TestConsoleTokenPrompt(t *testing.T) {
	const token = "console-test-token-0123456789"
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, exampleTree(t), token, "--token-file", tokFile)

	// The page and its files load without the token; the data does not.
	for path, want := range map[string]int{"/ui/": 200, "/ui/app.js": 200, "/ui/app.css": 200, "/v1/skills": 401, "/v1/events": 401, "/metrics": 401} {
		resp, err := http.Get(d.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a token = %d, want %d", path, resp.StatusCode, want)
		}
		if want == 200 && !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, resp.Header.Get("Content-Security-Policy"))
		}
	}

	p := openPage(t, d.URL+"/ui/")
	p.wait(10*time.Second, "the token prompt", `document.getElementById('token-dialog').open && document.getElementById('conn').dataset.state === 'auth'`)
	p.screenshot("token-prompt")

	p.do(10*time.Second, "a wrong token", chromedp.SendKeys(chromedp.ID("token-input"), "not-the-token-at-all"), chromedp.Click(chromedp.ID("token-save")))
	p.wait(10*time.Second, "the wrong token refused", `document.getElementById('token-dialog').open && !document.getElementById('token-error').hidden
		&& document.getElementById('token-error').textContent.includes('refused')`)

	p.do(10*time.Second, "the right token", clearInput("token-input"), chromedp.SendKeys(chromedp.ID("token-input"), token), chromedp.Click(chromedp.ID("token-save")))
	p.waitSkills(examplesActive)
	p.wait(10*time.Second, "live", `!document.getElementById('token-dialog').open && document.getElementById('conn').dataset.state === 'live'`)
	if got := eval[string](p, `sessionStorage.getItem('skillhost.token') || ''`); got != token {
		t.Errorf("sessionStorage token = %q", got)
	}
	if n := eval[int](p, `localStorage.length + document.cookie.length`); n != 0 {
		t.Errorf("the token leaked beyond the tab: localStorage or cookies hold %d", n)
	}
	// An action carries the token.
	p.do(10*time.Second, "click Disable", chromedp.Click(chromedp.CSS(`tr[data-skill="calc"] button[data-action="disable"]`)))
	p.wait(20*time.Second, "calc disabled", row("calc")+`.dataset.disabled === 'true'`)
	p.screenshot("token-ok")
}

// TestConsoleCrashLoopInActiveColumn crashes a skill until the page has
// shown it between a crash and its restart: the Active column holds the
// crashed version with its error and the restarts so far (the loader names
// no active version then), and the version is not among the others.
func TestConsoleCrashLoopInActiveColumn(t *testing.T) {
	tree := t.TempDir()
	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, tree, "")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(map[string]string{"svc": "1.0.0"})
	pid := func() string {
		var st struct{ Versions []struct{ PID int } }
		_, body := d.Do(t, "GET", "/v1/skills/svc", nil)
		json.Unmarshal(body, &st)
		if len(st.Versions) == 0 {
			return ""
		}
		return strconv.Itoa(st.Versions[0].PID)
	}
	// The restart waits 250 ms, doubling with each crash: within a few
	// crashes the page has had time to show the crashed version.
	for n := 1; ; n++ {
		old := pid()
		if code, body := d.Do(t, "POST", "/v1/tools/svc.crash/invoke", `{"arguments":{}}`); code != 502 {
			t.Fatalf("crash %d: %d %s", n, code, body)
		}
		got := p.poll(20*time.Second, `(() => { const r = `+row("svc")+`;
			if (r.querySelector('td.active .version[data-version="1.0.0"][data-state="crashed"]')) return 'crashed';
			const pid = r.querySelector('td.pid').textContent;
			return r.dataset.active === '1.0.0' && pid !== '—' && pid !== `+strconv.Quote(old)+` ? 'back' : ''; })()`)
		if got == "" {
			t.Fatalf("after crash %d the page shows neither the crash nor the restart", n)
		}
		if got == "back" {
			if n == 6 {
				t.Fatal("six crashes and the page never showed svc crashed in the Active column")
			}
			continue
		}
		r := eval[string](p, row("svc")+`.querySelector('td.active').innerText`)
		if !strings.Contains(r, "process exited unexpectedly") {
			t.Errorf("crashed Active cell has no error: %q", r)
		}
		if got := eval[string](p, row("svc")+`.querySelector('td.restarts').textContent`); got != strconv.Itoa(n) {
			t.Errorf("restarts during crash %d = %q", n, got)
		}
		if eval[bool](p, row("svc")+`.querySelector('td.others .version') !== null`) {
			t.Errorf("the crashed version is also listed among the others: %s", eval[string](p, row("svc")+`.innerText`))
		}
		p.screenshot("crashed")
		break
	}
	p.waitSkills(map[string]string{"svc": "1.0.0"})
}

// detailVersion is the JS expression of the "skill version" badge of the
// tool detail pane.
const detailVersion = `document.querySelector('#tool-detail .badge.v')?.textContent`

// TestConsoleToolDetailFollowsRegistry keeps a tool open in the detail pane
// while its skill changes under it: a hot swap shows the new version with
// what was typed still in the form, a removal shows the tool gone, and its
// return shows it again, all without a click.
func TestConsoleToolDetailFollowsRegistry(t *testing.T) {
	tree := t.TempDir()
	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, tree, "", "--grace", "2s")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(map[string]string{"svc": "1.0.0"})
	p.pick("svc.echo")
	if v := eval[string](p, detailVersion); v != "svc 1.0.0" {
		t.Fatalf("detail shows %q", v)
	}
	p.fill("msg", "hello")

	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.1.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	p.waitSkills(map[string]string{"svc": "1.1.0"})
	p.wait(10*time.Second, "the detail on 1.1.0 with the typed message kept", detailVersion+` === 'svc 1.1.0' && document.getElementById('arg-msg')?.value === 'hello'`)
	p.invoke()
	if r := p.resultText(); !strings.Contains(r, "svc 1.1.0") || !strings.Contains(r, `"msg": "hello"`) {
		t.Errorf("call from the redrawn form:\n%s", r)
	}

	// Removed: the pane says so, with the daemon's reason, and offers no form.
	if code, body := d.Do(t, "POST", "/v1/skills/svc/disable", nil); code != 200 {
		t.Fatalf("disable: %d %s", code, body)
	}
	p.wait(10*time.Second, "the detail shows svc.echo gone", `document.querySelector('#tool-detail [data-gone]') && !document.getElementById('try-form')
		&& document.querySelector('#tool-detail h3').textContent === 'svc.echo'`)
	p.screenshot("tool-gone")
	if code, body := d.Do(t, "POST", "/v1/skills/svc/enable", nil); code != 200 {
		t.Fatalf("enable: %d %s", code, body)
	}
	p.wait(10*time.Second, "the detail back on its return", `document.querySelector('#try-form[data-tool="svc.echo"]') && !document.querySelector('#tool-detail [data-gone]') && `+detailVersion+` === 'svc 1.1.0'`)
}

// TestConsoleTimelineReloadInPlace rewrites the serving version's manifest
// in place: the new instance is labelled a reload, not an up, and the old
// instance of the same version draining does not make the page forget what
// serves, so the next version is labelled a swap from it.
func TestConsoleTimelineReloadInPlace(t *testing.T) {
	tree := t.TempDir()
	dir, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.0.0", Binary: skillBin})
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, tree, "", "--grace", "2s")
	p := openPage(t, d.URL+"/ui/")
	p.waitSkills(map[string]string{"svc": "1.0.0"})
	p.wait(10*time.Second, "svc up on the timeline", `document.querySelector('#timeline li[data-kind="up"][data-skill="svc"]')`)
	old := eval[string](p, row("svc")+`.querySelector('td.pid').textContent`)

	// A new manifest (one more env variable), renamed over the old one.
	sum, err := testenv.SHA256File(filepath.Join(dir, "skill"))
	if err != nil {
		t.Fatal(err)
	}
	v := testenv.Version{Skill: "svc", Version: "1.0.0", Env: map[string]string{"TESTSKILL_RELOADED": "1"}}
	tmp := filepath.Join(tree, ".staging", "manifest.json")
	if err := os.WriteFile(tmp, v.Manifest(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "manifest.json")); err != nil {
		t.Fatal(err)
	}
	p.wait(10*time.Second, "the reload on the timeline", `document.querySelector('#timeline li[data-kind="reload"][data-skill="svc"][data-version="1.0.0"]')?.innerText.includes('svc 1.0.0: reloaded in place')`)
	p.wait(10*time.Second, "the old instance stopped", `document.querySelector('#timeline li[data-kind="stop"][data-skill="svc"][data-version="1.0.0"]')?.innerText.includes('pid `+old+`')`)
	if n := eval[int](p, `document.querySelectorAll('#timeline li[data-kind="up"][data-skill="svc"]').length`); n != 1 {
		t.Errorf("%d up events for svc, want only its first start", n)
	}

	if _, err := testenv.Install(tree, testenv.Version{Skill: "svc", Version: "1.1.0", Binary: skillBin}); err != nil {
		t.Fatal(err)
	}
	p.wait(10*time.Second, "the swap after the reload", `document.querySelector('#timeline li[data-kind="swap"][data-skill="svc"][data-version="1.1.0"]')?.innerText.includes('svc 1.0.0 → 1.1.0')`)
	p.screenshot("reload")
}
