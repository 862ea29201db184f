package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleTeams follows an agent team on the page: a team created
// through the API against a scripted model is in the list; its pane shows
// the lead with its status, inbox and tokens, the lead's answer and the
// team log live; a message typed into the page reaches the lead, whose new
// answer shows; Stop ends the team, as the API then says.
func TestConsoleTeams(t *testing.T) {
	// The model echoes the newest user message, so each answer says which
	// message the lead read.
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		last := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				last = m.Content
			}
		}
		answer, _ := json.Marshal("noted: " + last)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`, answer)
	}))
	t.Cleanup(llm.Close)
	d := startDaemon(t, exampleTree(t), "", "--llm-base-url", llm.URL+"/v1", "--llm-model", "scripted")
	if code, body := d.Do(t, "POST", "/v1/teams", map[string]any{"id": "crew", "task": "plan the sprint"}); code != 201 {
		t.Fatalf("create: %d %s\n%s", code, body, d.Logs())
	}

	p := openPage(t, d.URL+"/ui/")
	item := `#team-list li[data-team="crew"] button`
	p.wait(10*time.Second, "the team in the list", `document.querySelector('`+item+`')?.textContent.includes('lead lead')`)
	p.do(10*time.Second, "open the team", chromedp.Click(chromedp.CSS(item)))
	p.wait(10*time.Second, "the team's creation in its log", `!!document.querySelector('#team-events li[data-kind="team.created"]')`)
	p.wait(20*time.Second, "the lead's first answer", `document.getElementById('team-answer').textContent.includes('plan the sprint')`)
	lead := `document.querySelector('#team-members tr[data-member="lead"]')`
	p.wait(20*time.Second, "the lead idle, its inbox read, its tokens counted",
		lead+`?.textContent.includes('idle') && `+lead+`.querySelector('[data-col="inbox"]').textContent === '0' && `+lead+`.querySelector('[data-col="tokens"]').textContent !== '0'`)
	p.wait(10*time.Second, "the stream live", `document.getElementById('team-conn').textContent === 'live'`)

	if got := eval[string](p, `document.getElementById('team-to').value`); got != "lead" {
		t.Errorf("the message goes to %q by default, want the lead", got)
	}
	p.do(10*time.Second, "send as the human", chromedp.SendKeys(chromedp.ID("team-text"), "ship on Friday"),
		chromedp.Click(chromedp.CSS(`#team-say button`)))
	p.wait(20*time.Second, "the lead's answer to the page's message", `document.getElementById('team-answer').textContent.includes('[message from human] ship on Friday')`)
	if got := eval[string](p, `document.getElementById('team-text').value`); got != "" {
		t.Errorf("the message field holds %q after sending", got)
	}
	if dup := eval[bool](p, `(() => { const s = [...document.querySelectorAll('#team-events li')].map(li => li.dataset.seq); return new Set(s).size !== s.length; })()`); dup {
		t.Errorf("the team log shows an event twice:\n%s", eval[string](p, `document.getElementById('team-events').textContent`))
	}
	p.screenshot("teams")

	p.do(10*time.Second, "stop the team", chromedp.Click(chromedp.ID("team-stop")))
	p.wait(20*time.Second, "the stop in the log", `(document.querySelector('#team-events li[data-kind="team.stopped"]') || {}).textContent?.includes('stopped: stopped from the console')`)
	p.wait(10*time.Second, "the stop in the list", `document.querySelector('`+item+`').textContent.includes('stopped')`)
	p.wait(10*time.Second, "the lead stopped, and no Stop button", lead+`?.textContent.includes('stopped') && document.getElementById('team-stop').hidden`)
	if _, body := d.Do(t, "GET", "/v1/teams/crew", nil); !strings.Contains(string(body), `"stopped":true`) || !strings.Contains(string(body), `"stop_reason":"stopped from the console"`) {
		t.Errorf("the API says %s", body)
	}
}
