package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// maxPlainCompletionBytes caps the body read when a streamed request is answered with one
// JSON completion: the whole answer arrives at once, and nothing bounds it otherwise.
const maxPlainCompletionBytes = 8 << 20

// streamedKey marks the context of a streamed request, so the HTTP layer knows an event
// stream is expected.
type streamedKey struct{}

// asEventStream makes a plain JSON completion, sent in answer to a streamed request, read
// as the stream it stands for. Some servers and proxies ignore "stream": true and answer with
// one chat.completion object; go-openai's stream reader skips every line of it that does not
// start with "data:" and reports a clean, empty end, so the answer and the tool calls it
// asked for would be lost without a word. The completion is re-encoded as one stream chunk
// carrying the whole message (tool calls with their indexes), the finish reason and usage,
// and "[DONE]". A body that is not a completion with a choice becomes a 502 whose message
// says so: a model_error, never an empty success.
func asEventStream(resp *http.Response) *http.Response {
	if resp.StatusCode != http.StatusOK {
		return resp
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return resp
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPlainCompletionBytes+1))
	resp.Body.Close()
	var c openai.ChatCompletionResponse
	switch {
	case err != nil:
		return synthetic(resp, http.StatusBadGateway, fmt.Sprintf("reading the plain JSON answer to a streamed request: %v", err))
	case len(body) > maxPlainCompletionBytes:
		return synthetic(resp, http.StatusBadGateway, fmt.Sprintf("the plain JSON answer to a streamed request is over %d bytes", maxPlainCompletionBytes))
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		why := "it has no choices"
		if err != nil {
			why = err.Error()
		}
		return synthetic(resp, http.StatusBadGateway, "the model endpoint answered a streamed request with JSON that is not a chat completion ("+why+")")
	}
	ch := c.Choices[0]
	delta := openai.ChatCompletionStreamChoiceDelta{Role: ch.Message.Role, Content: ch.Message.Content}
	for i, tc := range ch.Message.ToolCalls {
		tc.Index = &i
		delta.ToolCalls = append(delta.ToolCalls, tc)
	}
	chunk := openai.ChatCompletionStreamResponse{ID: c.ID, Object: "chat.completion.chunk", Model: c.Model,
		Choices: []openai.ChatCompletionStreamChoice{{Delta: delta, FinishReason: ch.FinishReason}}}
	if c.Usage.TotalTokens > 0 || c.Usage.PromptTokens > 0 {
		u := c.Usage
		chunk.Usage = &u
	}
	b, err := json.Marshal(chunk)
	if err != nil {
		return synthetic(resp, http.StatusBadGateway, "re-encoding the plain JSON completion: "+err.Error())
	}
	var sse bytes.Buffer
	fmt.Fprintf(&sse, "data: %s\n\ndata: [DONE]\n\n", b)
	out := *resp
	out.Header = resp.Header.Clone()
	out.Header.Set("Content-Type", "text/event-stream")
	out.Header.Del("Content-Length")
	out.ContentLength = int64(sse.Len())
	out.Body = io.NopCloser(&sse)
	return &out
}

// synthetic replaces resp with an error answer in OpenAI's error shape.
func synthetic(resp *http.Response, status int, message string) *http.Response {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "skillhost_stream_error"}})
	out := *resp
	out.StatusCode, out.Status = status, fmt.Sprintf("%d %s", status, http.StatusText(status))
	out.Header = http.Header{"Content-Type": {"application/json"}}
	out.ContentLength = int64(len(b))
	out.Body = io.NopCloser(bytes.NewReader(b))
	return &out
}
