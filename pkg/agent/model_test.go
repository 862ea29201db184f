package agent

import "testing"

func TestMentionsTools(t *testing.T) {
	for msg, want := range map[string]bool{
		"registry.ollama.ai/library/gemma:2b does not support tools":                                                   true,
		`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`:                       true,
		"Function calling is not supported by this model":                                                              true,
		"tools are not enabled for this deployment":                                                                    true,
		"Invalid 'messages[3]': messages with role 'tool' must be a response to a preceding message with 'tool_calls'": false,
		"Invalid value for 'tool_choice'":                                                                              false,
		"model not found":                                                                                              false,
	} {
		if got := mentionsTools(msg); got != want {
			t.Errorf("mentionsTools(%q) = %v, want %v", msg, got, want)
		}
	}
}
