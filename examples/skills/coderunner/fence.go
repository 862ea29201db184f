package main

import (
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// jsLanguages are the info strings of a fenced block that hold JavaScript; an
// unlabelled block counts as JavaScript too.
var jsLanguages = map[string]bool{"": true, "js": true, "javascript": true, "mjs": true, "node": true}

// extractCode returns the JavaScript in text. A model's message usually
// wraps the code in a Markdown fence with prose around it, so: when text
// holds fenced blocks, the JavaScript ones are joined in order and the rest
// is ignored; when it holds fenced blocks but none in JavaScript, that is an
// error naming the language; text without a fence is the code itself.
func extractCode(text string) (string, error) {
	var (
		blocks []string
		other  []string
		cur    []string
		inside bool
		fence  string
		isJS   bool
	)
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if !inside {
			f, info, ok := openFence(trimmed)
			if !ok {
				continue
			}
			inside, fence, cur = true, f, nil
			lang := ""
			if f := strings.Fields(info); len(f) > 0 {
				lang = strings.ToLower(f[0])
			}
			isJS = jsLanguages[lang]
			if !isJS {
				other = append(other, lang)
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			inside = false
			if isJS {
				blocks = append(blocks, strings.Join(cur, "\n"))
			}
			continue
		}
		cur = append(cur, line)
	}
	if inside && isJS { // an unclosed fence runs to the end, as in CommonMark
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	switch {
	case len(blocks) > 0:
		return strings.Join(blocks, "\n"), nil
	case len(other) > 0:
		return "", sdk.Errorf("unsupported_language", "the text holds a %q code block and no JavaScript block; this runner only runs JavaScript (```js)", other[0])
	default:
		return text, nil
	}
}

// openFence reports whether line opens a fenced code block (three or more
// backticks or tildes) and returns the fence and its info string.
func openFence(line string) (fence, info string, ok bool) {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			info = strings.TrimSpace(line[n:])
			if c == "`" && strings.Contains(info, "`") {
				return "", "", false // inline code such as ```x``` is not a fence
			}
			return line[:n], info, true
		}
	}
	return "", "", false
}
