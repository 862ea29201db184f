package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/skillhost/skillhost/internal/testenv"
)

// TestChatStreamAnsweredWithPlainJSON: a model endpoint (or a proxy before it) that ignores
// "stream": true and answers with one JSON completion. `host chat` streams, and must still
// run the tool call the model asked for and print the answer (issue 28, item 15).
func TestChatStreamAnsweredWithPlainJSON(t *testing.T) {
	script := []openai.ChatCompletionMessage{callTool("c1", "alpha__echo", `{"msg":"plain"}`), say("Echo said plain.")}
	var n atomic.Int32
	var streamed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req openai.ChatCompletionRequest
		json.Unmarshal(raw, &req)
		if req.Stream {
			streamed.Add(1)
		}
		i := int(n.Add(1)) - 1
		if i >= len(script) {
			http.Error(w, `{"error":{"message":"script exhausted"}}`, 500)
			return
		}
		finish := openai.FinishReasonStop
		if len(script[i].ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{Object: "chat.completion", Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{Message: script[i], FinishReason: finish}}})
	}))
	t.Cleanup(srv.Close)
	agents := writeFile(t, "agents.yaml", "default: reader\nprofiles:\n  reader:\n    skills: [alpha]\n", 0o644)
	d := testenv.StartDaemon(t, hostBin, nil,
		"--skills", skillsTree(t), "--watch=false", "--llm-base-url", srv.URL+"/v1", "--llm-model", "fake-model", "--agents", agents)

	cmd := exec.Command(hostBin, "chat", "echo plain")
	cmd.Env = append(os.Environ(), "SKILLHOST_ADDR="+d.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("host chat: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "Echo said plain.\n" || !strings.Contains(stderr.String(), "← alpha.echo ok alpha@1.0.0") {
		t.Fatalf("stdout = %q\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if streamed.Load() != 2 {
		t.Fatalf("%d of the model requests streamed, want 2", streamed.Load())
	}
}
