package console

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillhost/skillhost/internal/testenv"
)

var (
	hostBin    string
	skillBin   string
	examples   string // a built tree of the example skills, copied per test
	chromePath string
	artifacts  = filepath.Join(testenv.ModuleRoot(), "test", "artifacts", "console")
)

// findChromium returns the browser to drive: $CHROMIUM, else Debian's
// chromium (or a Chrome) on PATH.
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestMain(m *testing.M) {
	chromePath = findChromium()
	if chromePath == "" {
		msg := "console browser tests need Chromium and none was found: run scripts/console-test.sh (it installs Debian's chromium), apt-get install -y chromium, or set CHROMIUM=/path/to/chrome"
		if os.Getenv("SKILLHOST_REQUIRE_BROWSER") != "" {
			fmt.Fprintln(os.Stderr, "FAIL: "+msg)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "SKIP: "+msg)
		os.Exit(m.Run()) // every test skips with the same message
	}
	os.Exit(testenv.RunWithBinaries(m, func(bins testenv.Binaries) error {
		hostBin, skillBin, examples = bins.Host, bins.Skill, bins.Examples
		os.RemoveAll(artifacts) // only this run's screenshots
		return os.MkdirAll(artifacts, 0o755)
	}))
}

// exampleTree copies the built example skills into a fresh tree.
func exampleTree(t *testing.T) string { return testenv.CopyTree(t, examples) }

// startDaemon serves skills and waits until the first scan settled; token
// is what the test sends (pass the matching --token-file in args).
func startDaemon(t *testing.T, skills, token string, args ...string) *testenv.Daemon {
	t.Helper()
	full := append([]string{"--skills", skills, "--state-dir", filepath.Join(t.TempDir(), "state"), "--debounce", "100ms"}, args...)
	d := testenv.StartDaemon(t, hostBin, nil, full...)
	d.Token = token
	if !testenv.WaitFor(30*time.Second, func() bool {
		code, _ := d.Do(t, "GET", "/readyz", nil)
		return code == 200
	}) {
		t.Fatalf("daemon never ready\n%s", d.Logs())
	}
	return d
}

// page is one browser tab on the console, in a browser of its own (fresh
// profile), with the page's console messages collected.
type page struct {
	t    *testing.T
	ctx  context.Context
	url  string
	name string // for artifact file names

	mu   sync.Mutex // guards msgs
	msgs []chromedp.ConsoleMessage
}

// openPage starts Chromium headless and loads url. The browser and its
// profile go away when the test ends. Page errors (uncaught exceptions, CSP
// or Trusted Types violations) fail the test.
func openPage(t *testing.T, url string) *page {
	t.Helper()
	if chromePath == "" {
		t.Skip("no Chromium: run scripts/console-test.sh, or apt-get install -y chromium")
	}
	profile, err := os.MkdirTemp("", "console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var outMu sync.Mutex
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromePath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		// The machine may have no network: keep Chromium from calling home.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,MediaRouter,OptimizationHints"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1440, 1000),
		chromedp.CombinedOutput(writerFunc(func(b []byte) (int, error) {
			outMu.Lock()
			defer outMu.Unlock()
			return out.Write(b)
		})),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	p := &page{t: t, ctx: ctx, url: url, name: strings.TrimPrefix(t.Name(), "TestConsole")}
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		os.RemoveAll(profile)
		t.Fatalf("start chromium %s: %v", chromePath, err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.msgs = append(p.msgs, m)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			p.screenshot("failed")
		}
		p.checkConsole()
		cancelTab()
		cancelAlloc()
		<-done
		// Chromium's helpers can still write into the profile for a moment.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if t.Failed() {
			outMu.Lock()
			t.Logf("chromium output (without its D-Bus complaints):\n%s", quiet(out.String()))
			outMu.Unlock()
		}
	})
	p.do(30*time.Second, "load "+url, chromedp.Navigate(url))
	return p
}

// quiet drops the lines a headless Chromium without D-Bus always prints.
func quiet(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.Contains(l, "dbus") && !strings.Contains(l, "unexpected operator") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// checkConsole fails the test on uncaught exceptions and policy
// violations, and keeps the whole console as an artifact.
func (p *page) checkConsole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var all strings.Builder
	for _, m := range p.msgs {
		fmt.Fprintf(&all, "%s %s %s\n", m.Type, m.Source, m.Text)
		bad := m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Trusted Type")
		if bad {
			p.t.Errorf("page console: %s (%s:%d)", m, m.URL, m.Line)
		}
	}
	os.WriteFile(filepath.Join(artifacts, p.name+".console.txt"), []byte(all.String()), 0o644)
}

// do runs steps with a deadline, and fails the test with what it was doing.
func (p *page) do(timeout time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v\npage text:\n%s", what, err, p.text())
	}
}

// wait waits until the JavaScript expression is truthy. It evaluates from
// the test (chromedp's Poll builds a function from a string in the page,
// which the console's CSP rightly refuses).
func (p *page) wait(timeout time.Duration, what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			p.t.Fatalf("waiting for %s: not true after %v (%s; last error %v)\npage text:\n%s", what, timeout, expr, last, p.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poll evaluates the JavaScript expression until it gives a non-empty
// string, and returns it; "" when the timeout passes first. It is wait for
// a test that goes one way or another on what the page shows.
func (p *page) poll(timeout time.Duration, expr string) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("String(("+expr+") || '')"))
		cancel()
		if err == nil && s != "" {
			return s
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is the page's visible text, for failure messages.
func (p *page) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	return s
}

// screenshot saves the full page to test/artifacts/console/<test>-<what>.png
// and returns the PNG.
func (p *page) screenshot(what string) []byte {
	ctx, cancel := context.WithTimeout(p.ctx, 20*time.Second)
	defer cancel()
	// From the top, so the sticky header sits where it belongs, and after
	// a moment for the layout to settle.
	chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), chromedp.Sleep(200*time.Millisecond))
	b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("screenshot %s: %v", what, err)
		return nil
	}
	path := filepath.Join(artifacts, p.name+"-"+what+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Logf("screenshot %s: %v", what, err)
	}
	return b
}

// updateDocsScreenshot writes docs/console.png (CONSOLE_UPDATE_DOCS=1):
// the screenshot reduced to its 256 most common colours (a UI has few; the
// rest are anti-aliasing shades, mapped to the nearest) to keep the
// repository light, and refused over 300 KiB.
func (p *page) updateDocsScreenshot() {
	p.t.Helper()
	shot := p.screenshot("docs")
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		p.t.Fatalf("docs screenshot: %v", err)
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, quantize(img)); err != nil {
		p.t.Fatal(err)
	}
	if buf.Len() > 300<<10 {
		p.t.Fatalf("docs/console.png would be %d KiB; keep it under 300 KiB", buf.Len()>>10)
	}
	path := filepath.Join(testenv.ModuleRoot(), "docs", "console.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("wrote %s (%d KiB)", path, buf.Len()>>10)
}

// quantize maps img onto a palette of its 256 most frequent colours.
func quantize(img image.Image) *image.Paletted {
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			count[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}]++
		}
	}
	colors := make([]color.RGBA, 0, len(count))
	for c := range count {
		colors = append(colors, c)
	}
	slices.SortFunc(colors, func(a, b color.RGBA) int {
		if d := count[b] - count[a]; d != 0 {
			return d
		}
		return int(a.R)<<16 | int(a.G)<<8 | int(a.B) - (int(b.R)<<16 | int(b.G)<<8 | int(b.B))
	})
	pal := make(color.Palette, 0, 256)
	for _, c := range colors[:min(256, len(colors))] {
		pal = append(pal, c)
	}
	dst := image.NewPaletted(b, pal)
	draw.Draw(dst, b, img, b.Min, draw.Src)
	return dst
}

// row is the JS expression of a skill's table row.
func row(skill string) string {
	return fmt.Sprintf(`document.querySelector('#skills-body tr[data-skill=%q]')`, skill)
}

// waitSkills waits until the table shows each skill serving its version.
func (p *page) waitSkills(active map[string]string) {
	p.t.Helper()
	for s, v := range active {
		p.wait(20*time.Second, s+" active "+v, fmt.Sprintf(`(() => { const r = %s; return r && r.dataset.active === %q && r.querySelector('td.active [data-state="active"]'); })()`, row(s), v))
	}
}
