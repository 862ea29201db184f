package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestConsoleRuns follows a multi-agent run on the page: the list, the
// live transcript with each speaker choice and its reason, the human's
// answer typed into the page, the stop reason; then a Stop button ends a
// second run (external_stop).
func TestConsoleRuns(t *testing.T) {
	var mu sync.Mutex
	script := []string{"Hello. Where shall we go?", "Lisbon it is. BYE", "Hello again."}
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		line := script[0]
		script = script[1:]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`, line)
	}))
	t.Cleanup(llm.Close)
	dir := t.TempDir()
	agents := filepath.Join(dir, "agents.yaml")
	os.WriteFile(agents, []byte("default: guide\nprofiles:\n  guide: {system: You plan trips.}\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "flows"), 0o755)
	os.WriteFile(filepath.Join(dir, "flows", "trip.yaml"), []byte(
		"participants: [{name: guide, profile: guide}, {name: me, human: true}]\ntermination: {text_mention: BYE}\n"), 0o644)
	d := startDaemon(t, exampleTree(t), "", "--agents", agents, "--llm-base-url", llm.URL+"/v1", "--llm-model", "scripted")

	start := func() string {
		code, body := d.Do(t, "POST", "/v1/runs", map[string]string{"flow": "trip", "input": "Plan a weekend."})
		var sum struct{ ID string }
		if code != 201 || json.Unmarshal(body, &sum) != nil {
			t.Fatalf("start: %d %s", code, body)
		}
		if !testenv.WaitFor(20*time.Second, func() bool {
			_, body := d.Do(t, "GET", "/v1/runs/"+sum.ID, nil)
			return strings.Contains(string(body), `"status":"waiting_for_human"`)
		}) {
			t.Fatalf("run %s never waited for the human\n%s", sum.ID, d.Logs())
		}
		return sum.ID
	}
	id := start()
	p := openPage(t, d.URL+"/ui/")
	item := fmt.Sprintf(`#run-list li[data-run=%q] button`, id)
	p.wait(10*time.Second, "the run in the list", `document.querySelector('`+item+`')`)
	p.do(10*time.Second, "open the run", chromedp.Click(chromedp.CSS(item)))
	p.wait(10*time.Second, "the guide's message", `[...document.querySelectorAll('#run-events li[data-kind="message"]')].some(li => li.textContent.includes('guide: Hello. Where shall we go?'))`)
	if got := eval[string](p, `document.querySelector('#run-events li[data-kind="speaker_choice"]').textContent`); !strings.Contains(got, "→ guide") || !strings.Contains(got, "the flow's start participant") {
		t.Errorf("first speaker choice shows %q", got)
	}
	p.wait(10*time.Second, "the waiting badge", `document.getElementById('run-status').textContent === 'waiting for human'`)
	p.do(10*time.Second, "answer", chromedp.SendKeys(chromedp.CSS(`#run-events .run-input`), "Lisbon"),
		chromedp.Click(chromedp.CSS(`#run-events .run-say button`)))
	p.wait(20*time.Second, "the stop", `(document.querySelector('#run-events li[data-kind="stop"]') || {}).textContent?.includes('stopped: text_mention')`)
	if got := eval[string](p, `document.getElementById('run-events').textContent`); !strings.Contains(got, "me: Lisbon") || !strings.Contains(got, "guide: Lisbon it is. BYE") {
		t.Errorf("transcript on the page: %q", got)
	}
	p.wait(10*time.Second, "the stop reason in the list", `document.querySelector('`+item+`').textContent.includes('text_mention')`)
	p.screenshot("runs")

	id2 := start()
	p.do(10*time.Second, "refresh the list", chromedp.Click(chromedp.ID("runs-refresh")))
	item2 := fmt.Sprintf(`#run-list li[data-run=%q] button`, id2)
	p.wait(10*time.Second, "the second run in the list", `document.querySelector('`+item2+`')`)
	p.do(10*time.Second, "open the second run", chromedp.Click(chromedp.CSS(item2)))
	p.wait(10*time.Second, "its message", `document.getElementById('run-events').textContent.includes('Hello again.')`)
	p.do(10*time.Second, "stop it", chromedp.Click(chromedp.ID("run-stop")))
	p.wait(20*time.Second, "the external stop", `(document.querySelector('#run-events li[data-kind="stop"]') || {}).textContent?.includes('stopped: external_stop')`)
	if _, body := d.Do(t, "GET", "/v1/runs/"+id2, nil); !strings.Contains(string(body), `"stop_reason":"external_stop"`) {
		t.Errorf("the API says %s", body)
	}
}
