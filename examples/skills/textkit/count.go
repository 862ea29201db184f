package main

import (
	"context"
	"unicode"
)

type countIn struct {
	Text string `json:"text" jsonschema_description:"The text to measure."`
}

type scriptCounts struct {
	Han   int `json:"han" jsonschema_description:"Chinese characters (Han script, also used in Japanese kanji)."`
	Latin int `json:"latin" jsonschema_description:"Latin letters, including accented ones."`
	Other int `json:"other" jsonschema_description:"Every other non-space character: digits, punctuation, symbols, other scripts."`
}

type countOut struct {
	Characters int          `json:"characters" jsonschema_description:"Unicode code points (runes), including spaces."`
	Bytes      int          `json:"bytes" jsonschema_description:"Length in UTF-8 bytes."`
	Words      int          `json:"words" jsonschema_description:"Words: each CJK character is one word; other words are runs of letters and digits."`
	Lines      int          `json:"lines" jsonschema_description:"Lines; a final newline does not start a new line; 0 for empty text."`
	Whitespace int          `json:"whitespace" jsonschema_description:"Spaces, tabs and line breaks."`
	Scripts    scriptCounts `json:"scripts" jsonschema_description:"Non-space characters by script; the three add up to characters minus whitespace."`
}

// isCJK reports whether r is written without spaces between words, so that
// each character is counted as a word of its own.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' }

func count(ctx context.Context, in countIn) (countOut, error) {
	if err := checkSize("text", in.Text); err != nil {
		return countOut{}, err
	}
	out := countOut{Bytes: len(in.Text)}
	tick := ticker{ctx: ctx}
	rs := []rune(in.Text)
	inWord := false
	for i, r := range rs {
		if err := tick.err(); err != nil {
			return countOut{}, err
		}
		out.Characters++
		if r == '\n' {
			out.Lines++
		}
		switch {
		case unicode.IsSpace(r):
			out.Whitespace++
		case unicode.Is(unicode.Han, r):
			out.Scripts.Han++
		case unicode.Is(unicode.Latin, r):
			out.Scripts.Latin++
		default:
			out.Scripts.Other++
		}
		switch {
		case isCJK(r):
			out.Words++
			inWord = false
		case isWordRune(r):
			if !inWord {
				out.Words++
				inWord = true
			}
		case isApostrophe(r) && inWord && i+1 < len(rs) && unicode.IsLetter(rs[i+1]) && !isCJK(rs[i+1]):
			// don't, l'homme: the apostrophe stays inside the word.
		default:
			inWord = false
		}
	}
	if len(rs) > 0 && rs[len(rs)-1] != '\n' {
		out.Lines++
	}
	return out, nil
}
