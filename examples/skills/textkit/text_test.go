package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

var bg = context.Background()

func wantCode(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != code || !strings.Contains(se.Message, msg) {
		t.Errorf("%s: error = %v; want %s containing %q", what, err, code, msg)
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		text string
		want countOut
	}{
		{"", countOut{}},
		{"hello world", countOut{Characters: 11, Bytes: 11, Words: 2, Lines: 1, Whitespace: 1, Scripts: scriptCounts{Latin: 10}}},
		{"你好，世界", countOut{Characters: 5, Bytes: 15, Words: 4, Lines: 1, Scripts: scriptCounts{Han: 4, Other: 1}}},
		{"Go语言很好 don't panic!\n第二行\n", countOut{Characters: 24, Bytes: 38, Words: 10, Lines: 2, Whitespace: 4,
			Scripts: scriptCounts{Han: 7, Latin: 11, Other: 2}}},
		{"a\r\nb", countOut{Characters: 4, Bytes: 4, Words: 2, Lines: 2, Whitespace: 2, Scripts: scriptCounts{Latin: 2}}},
		{"3.14 is π", countOut{Characters: 9, Bytes: 10, Words: 4, Lines: 1, Whitespace: 2, Scripts: scriptCounts{Latin: 2, Other: 5}}},
		{"カタカナ and ひらがな", countOut{Characters: 13, Bytes: 29, Words: 9, Lines: 1, Whitespace: 2, Scripts: scriptCounts{Latin: 3, Other: 8}}},
	}
	for _, tt := range tests {
		got, err := count(bg, countIn{Text: tt.text})
		if err != nil || got != tt.want {
			t.Errorf("count(%q) = %+v, %v; want %+v", tt.text, got, err, tt.want)
		}
	}
}

func TestCountCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := count(ctx, countIn{Text: strings.Repeat("字", 10000)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("count with cancelled ctx = %v", err)
	}
	_, err := count(bg, countIn{Text: strings.Repeat("x", maxTextBytes+1)})
	wantCode(t, "count huge", err, "text_too_long", "limit")
}

func TestSlugify(t *testing.T) {
	tests := []struct {
		in   slugifyIn
		want string
	}{
		{slugifyIn{Text: "Hello, World! 2024"}, "hello-world-2024"},
		{slugifyIn{Text: "  --Already--slugged--  "}, "already-slugged"},
		{slugifyIn{Text: "Crème Brûlée à la carte"}, "creme-brulee-a-la-carte"},
		{slugifyIn{Text: "Straße Ærø"}, "strasse-aero"},
		{slugifyIn{Text: "Don't Stop"}, "dont-stop"},
		{slugifyIn{Text: "Go 语言入门 guide"}, "go-guide"},
		{slugifyIn{Text: "Go 语言入门 guide", KeepCJK: true}, "go-语言入门-guide"},
		{slugifyIn{Text: "公司制度：请假", KeepCJK: true}, "公司制度-请假"},
		{slugifyIn{Text: "Hello World", Separator: "_"}, "hello_world"},
		{slugifyIn{Text: "the quick brown fox", MaxLength: 12}, "the-quick"},
		{slugifyIn{Text: "abcdefghij", MaxLength: 4}, "abcd"},
		{slugifyIn{Text: "e\u0301t\u00e9"}, "ete"},
	}
	for _, tt := range tests {
		got, err := slugify(bg, tt.in)
		if err != nil || got.Slug != tt.want {
			t.Errorf("slugify(%+v) = %q, %v; want %q", tt.in, got.Slug, err, tt.want)
		}
	}
	_, err := slugify(bg, slugifyIn{Text: "请假条例"})
	wantCode(t, "slugify CJK only", err, "empty_slug", "keep_cjk")
	_, err = slugify(bg, slugifyIn{Text: "!!!"})
	wantCode(t, "slugify punctuation", err, "empty_slug", `"!!!"`)
	_, err = slugify(bg, slugifyIn{Text: "a", Separator: "."})
	wantCode(t, "slugify separator", err, "invalid_arguments", `separator "."`)
}

func TestCase(t *testing.T) {
	tests := []struct {
		text, to, want string
	}{
		{"hello World", "upper", "HELLO WORLD"},
		{"Hello WORLD", "lower", "hello world"},
		{"hello wORLD, don't-stop", "title", "Hello World, Don't-Stop"},
		{"Hello World", "snake", "hello_world"},
		{"HTTPServer error", "snake", "http_server_error"},
		{"userID", "kebab", "user-id"},
		{"parse_utf8Input", "camel", "parseUtf8Input"},
		{"hello-world foo", "pascal", "HelloWorldFoo"},
		{"max retry count", "constant", "MAX_RETRY_COUNT"},
		{"用户Name列表", "snake", "用户_name_列表"},
		{"don't panic", "snake", "dont_panic"},
		{"", "camel", ""},
	}
	for _, tt := range tests {
		got, err := convertCase(bg, caseIn{Text: tt.text, To: tt.to})
		if err != nil || got.Text != tt.want {
			t.Errorf("case(%q, %s) = %q, %v; want %q", tt.text, tt.to, got.Text, err, tt.want)
		}
	}
	_, err := convertCase(bg, caseIn{Text: "x", To: "sponge"})
	wantCode(t, "case sponge", err, "invalid_arguments", `to "sponge"`)
}

func ptr(s string) *string { return &s }

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   truncateIn
		want string
	}{
		{truncateIn{Text: "hello", MaxRunes: 10}, "hello"},
		{truncateIn{Text: "hello", MaxRunes: 5}, "hello"},
		{truncateIn{Text: "hello world", MaxRunes: 8}, "hello w…"},
		{truncateIn{Text: "hello world", MaxRunes: 7}, "hello…"}, // trailing space trimmed
		{truncateIn{Text: "hello world", MaxRunes: 8, AtWord: true}, "hello…"},
		{truncateIn{Text: "hello world", MaxRunes: 8, Suffix: ptr("...")}, "hello..."},
		{truncateIn{Text: "hello world", MaxRunes: 4, Suffix: ptr("")}, "hell"},
		{truncateIn{Text: "你好世界和平", MaxRunes: 4}, "你好世…"},
		{truncateIn{Text: "abc", MaxRunes: 0, Suffix: ptr("")}, ""},
		{truncateIn{Text: "cafe\u0301 au lait", MaxRunes: 5, Suffix: ptr("")}, "cafe\u0301"},
		{truncateIn{Text: "cafe\u0301 au lait", MaxRunes: 4, Suffix: ptr("")}, "caf"}, // e + combining acute: whole or not at all
		{truncateIn{Text: "ok 👍🏽 fine", MaxRunes: 5, Suffix: ptr("")}, "ok 👍🏽"},
		{truncateIn{Text: "ok 👍🏽 fine", MaxRunes: 4, Suffix: ptr("")}, "ok"}, // no thumb without its skin tone
		{truncateIn{Text: "abcdefghij", MaxRunes: 5, AtWord: true}, "abcd…"}, // no boundary: hard cut
	}
	for _, tt := range tests {
		got, err := truncate(bg, tt.in)
		if err != nil || got.Text != tt.want {
			t.Errorf("truncate(%+v) = %q, %v; want %q", tt.in, got.Text, err, tt.want)
			continue
		}
		if !utf8.ValidString(got.Text) || got.Runes > tt.in.MaxRunes {
			t.Errorf("truncate(%+v) = %+v: invalid or too long", tt.in, got)
		}
		if got.Truncated != (got.OriginalRunes > tt.in.MaxRunes) {
			t.Errorf("truncate(%+v).Truncated = %v", tt.in, got.Truncated)
		}
	}
	_, err := truncate(bg, truncateIn{Text: "hello", MaxRunes: 2, Suffix: ptr("...")})
	wantCode(t, "truncate long suffix", err, "invalid_arguments", `suffix "..."`)
	_, err = truncate(bg, truncateIn{Text: "hello", MaxRunes: -1})
	wantCode(t, "truncate negative", err, "invalid_arguments", "max_runes -1")
}

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld 你好 👨‍👩‍👧", 5, true)
	f.Fuzz(func(t *testing.T, s string, n int, atWord bool) {
		if n < 1 || n > 1000 {
			return
		}
		got, err := truncate(bg, truncateIn{Text: s, MaxRunes: n, AtWord: atWord})
		if err != nil {
			t.Fatal(err)
		}
		if got.Runes > n || !strings.HasPrefix(s, strings.TrimSuffix(got.Text, "…")) && utf8.ValidString(s) {
			t.Fatalf("truncate(%q, %d) = %+v", s, n, got)
		}
	})
}
