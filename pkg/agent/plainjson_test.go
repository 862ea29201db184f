package agent

import (
	"strings"
	"testing"
)

// plain makes a scripted reply come back as one JSON completion even to a streamed request.
func plain(r reply) reply {
	r.plain = true
	return r
}

func TestStreamedRequestAnsweredWithPlainJSON(t *testing.T) {
	f := newFakeLLM(t, plain(calls(tc("call_1", "alpha__echo", `{"msg":"hello"}`))), plain(text("The skill said hello.")))
	a, _ := newTestAgent(t, f, profilesDoc, nil)
	var evs events
	resp, err := ask(a, "reader", "echo hello", true, evs.add)
	if err != nil {
		t.Fatal(err)
	}
	if !f.request(0).req.Stream {
		t.Fatalf("the request did not ask for a stream: %s", f.request(0).raw)
	}
	if resp.Answer != "The skill said hello." || len(resp.ToolCalls) != 1 || !resp.ToolCalls[0].OK || resp.ToolCalls[0].Tool != "alpha.echo" {
		t.Fatalf("the tool call or the answer in the plain JSON bodies was lost: %+v", resp)
	}
	if resp.Usage.TotalTokens != 30 {
		t.Errorf("usage = %+v, want the bodies' 15 + 15", resp.Usage)
	}
	var streamed string
	for _, e := range evs.list() {
		if e.Type == EventDelta && e.Step == 2 {
			streamed += e.Delta
		}
	}
	if streamed != resp.Answer {
		t.Errorf("deltas of the answer = %q, want %q", streamed, resp.Answer)
	}
}

func TestStreamedRequestAnsweredWithJSONThatIsNoCompletion(t *testing.T) {
	f := newFakeLLM(t, reply{body: `{"object":"list","data":[]}`})
	a, _ := newTestAgent(t, f, profilesDoc, func(c *Config) { c.Retry.MaxAttempts = 1 })
	_, err := ask(a, "reader", "echo hello", true, nil)
	if err == nil || !strings.Contains(err.Error(), "not a chat completion") {
		t.Fatalf("err = %v, want a model error saying the JSON is not a chat completion", err)
	}
}
