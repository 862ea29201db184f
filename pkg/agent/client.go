package agent

import (
	"context"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// ChatClient is the agent loop's model client (retries with backoff,
// Retry-After, the API key redacted from echoed errors) for other engines
// that drive a model themselves, such as pkg/flow's multi-agent runs. It is
// safe for concurrent use.
type ChatClient struct{ m *model }

// NewChatClient returns a client of the OpenAI-compatible endpoint at
// baseURL. apiKey goes to that endpoint only; hc may be nil.
func NewChatClient(baseURL, apiKey string, hc *http.Client, retry RetryPolicy) (*ChatClient, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	return &ChatClient{m: newModel(u, apiKey, hc, retry)}, nil
}

// Complete sends one chat completion request, not streamed, and returns the
// model's message and what it cost. Every error is a *registry.Error.
func (c *ChatClient) Complete(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, openai.Usage, error) {
	t, err := c.m.complete(ctx, req, callOpts{})
	if err != nil {
		return openai.ChatCompletionMessage{}, openai.Usage{}, err.err
	}
	return t.msg, t.usage, nil
}
