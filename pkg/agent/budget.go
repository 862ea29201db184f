package agent

import (
	"encoding/json"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// EstimateTokens estimates how many tokens a model's tokenizer makes of s,
// without a tokenizer: skillhost talks to many models whose vocabularies
// differ, and the estimate only has to err on the safe side.
//
// ASCII counts one token per 3 bytes (BPE vocabularies average about 4 for
// English prose and about 3 for JSON and code, which is most of what a tool
// loop sends); each Han, kana or Hangul character counts one token (common
// ones are one token in current vocabularies, rare ones more); any other
// character counts half a token. The result overestimates English by about a
// quarter and is close for JSON and Chinese, so a request that fits the
// estimate fits the model.
func EstimateTokens(s string) int {
	var ascii, cjk, other int
	for _, r := range s {
		switch {
		case r < 0x80:
			ascii++
		case isCJK(r):
			cjk++
		default:
			other++
		}
	}
	return (ascii+2)/3 + cjk + (other+1)/2
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303f) || // CJK punctuation
		(r >= 0xff00 && r <= 0xffef) // full-width forms
}

// Per-message and per-request overheads, as OpenAI documents them for its
// chat format (role markers and separators).
const (
	tokensPerMessage = 4
	tokensPerRequest = 3
)

// estimateMessage estimates one message of the chat.
func estimateMessage(m openai.ChatCompletionMessage) int {
	n := tokensPerMessage + EstimateTokens(m.Role) + EstimateTokens(m.Content) + EstimateTokens(m.Name)
	for _, tc := range m.ToolCalls {
		n += tokensPerMessage + EstimateTokens(tc.ID) + EstimateTokens(tc.Function.Name) + EstimateTokens(tc.Function.Arguments)
	}
	if m.ToolCallID != "" {
		n += EstimateTokens(m.ToolCallID)
	}
	return n
}

// estimateTools estimates the tools payload as the JSON it is sent as.
func estimateTools(tools []openai.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return EstimateTokens(string(b))
}

// estimateRequest estimates the prompt of a chat completion request.
func estimateRequest(msgs []openai.ChatCompletionMessage, tools []openai.Tool) int {
	n := tokensPerRequest + estimateTools(tools)
	for _, m := range msgs {
		n += estimateMessage(m)
	}
	return n
}
