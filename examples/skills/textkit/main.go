package main

import (
	"context"

	"github.com/skillhost/skillhost/sdk"
)

// newSkill builds the skill; tests serve it in-process with skilltest.Start.
func newSkill() *sdk.Skill {
	s := sdk.New("textkit", "1.0.0",
		"Text utilities: count characters, bytes, words and lines (Chinese-aware), make URL slugs, "+
			"convert case (snake_case, camelCase, kebab-case, Title Case) and truncate text safely. 文本处理：字数统计、大小写转换、截断。")
	s.Tags = []string{"text", "string", "文本"}
	s.Author = "skillhost examples"

	sdk.Tool(s, "count",
		"Count the characters (Unicode code points), UTF-8 bytes, words and lines of a text, with a per-script breakdown (han, latin, other). "+
			"Each Chinese/Japanese character counts as one word; Latin words are split on spaces and punctuation. 字数统计。",
		count, sdk.ReadOnly(), sdk.WithTags("word count", "字数"))
	sdk.Tool(s, "slugify",
		"Turn a title into a lowercase URL slug, e.g. \"Hello, World! 2024\" → \"hello-world-2024\". "+
			"Accents are folded (é → e); Chinese characters are dropped unless keep_cjk is true.",
		slugify, sdk.ReadOnly(), sdk.WithTags("slug", "url"))
	sdk.Tool(s, "case",
		"Convert text to upper, lower, title, snake (snake_case), camel (camelCase), pascal (PascalCase), kebab (kebab-case) "+
			"or constant (CONSTANT_CASE). Identifier styles split words on spaces, punctuation and camelCase humps (HTTPServer → http, server).",
		convertCase, sdk.ReadOnly(), sdk.WithTags("case", "identifier"))
	sdk.Tool(s, "truncate",
		"Shorten text to at most max_runes characters, ending with a suffix (default \"…\") when cut. "+
			"Never splits a character or a combining sequence; with at_word it cuts at a word boundary. 截断文本。",
		truncate, sdk.ReadOnly(), sdk.WithTags("shorten", "截断"))
	return s
}

func main() { newSkill().Serve() }

// maxTextBytes bounds the text a single call handles, far above any sane
// prompt, so that a runaway caller gets a clear error instead of a slow call.
const maxTextBytes = 8 << 20

func checkSize(field, text string) error {
	if len(text) > maxTextBytes {
		return sdk.Errorf("text_too_long", "%s is %d bytes; the limit is %d", field, len(text), maxTextBytes)
	}
	return nil
}

// ticker checks ctx every few thousand runes of a loop.
type ticker struct {
	ctx context.Context
	n   int
}

func (t *ticker) err() error {
	t.n++
	if t.n&4095 == 0 {
		return t.ctx.Err()
	}
	return nil
}
