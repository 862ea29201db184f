package main

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

// ---- slugify ----

type slugifyIn struct {
	Text      string `json:"text" jsonschema:"minLength=1" jsonschema_description:"Text to turn into a slug, e.g. a title."`
	KeepCJK   bool   `json:"keep_cjk,omitempty" jsonschema:"default=false" jsonschema_description:"Keep Chinese and Japanese characters in the slug (\"Go 语言入门\" → \"go-语言入门\") instead of dropping them."`
	Separator string `json:"separator,omitempty" jsonschema:"enum=-,enum=_,default=-" jsonschema_description:"Character between words: - (default) or _."`
	MaxLength int    `json:"max_length,omitempty" jsonschema:"minimum=1" jsonschema_description:"Cut the slug to at most this many characters, at a separator when possible."`
}

type slugifyOut struct {
	Slug string `json:"slug"`
}

// foldLatin maps common accented Latin letters (already lowercased) to ASCII.
// It is deliberately small: transliteration of other scripts is out of scope.
var foldLatin = map[rune]string{
	'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ā': "a", 'ă': "a", 'ą': "a",
	'æ': "ae", 'ç': "c", 'ć': "c", 'č': "c", 'ď': "d", 'đ': "d", 'ð': "d",
	'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ē': "e", 'ę': "e", 'ě': "e",
	'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ī': "i", 'ı': "i",
	'ł': "l", 'ñ': "n", 'ń': "n", 'ň': "n",
	'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ō': "o", 'ő': "o", 'œ': "oe",
	'ř': "r", 'ś': "s", 'š': "s", 'ş': "s", 'ß': "ss", 'ť': "t", 'ţ': "t", 'þ': "th",
	'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ū': "u", 'ů': "u", 'ű': "u",
	'ý': "y", 'ÿ': "y", 'ź': "z", 'ż': "z", 'ž': "z",
}

func slugify(ctx context.Context, in slugifyIn) (slugifyOut, error) {
	if err := checkSize("text", in.Text); err != nil {
		return slugifyOut{}, err
	}
	sep := in.Separator
	switch sep {
	case "":
		sep = "-"
	case "-", "_":
	default:
		return slugifyOut{}, sdk.Errorf("invalid_arguments", "separator %q must be - or _", in.Separator)
	}
	if in.MaxLength < 0 {
		return slugifyOut{}, sdk.Errorf("invalid_arguments", "max_length %d must be positive", in.MaxLength)
	}
	var b strings.Builder
	pendingSep := false
	emit := func(s string) {
		if pendingSep && b.Len() > 0 {
			b.WriteString(sep)
		}
		pendingSep = false
		b.WriteString(s)
	}
	tick := ticker{ctx: ctx}
	for _, r := range in.Text {
		if err := tick.err(); err != nil {
			return slugifyOut{}, err
		}
		r = unicode.ToLower(r)
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9'):
			emit(string(r))
		case foldLatin[r] != "":
			emit(foldLatin[r])
		case isCJK(r) && in.KeepCJK:
			emit(string(r))
		case isApostrophe(r) || unicode.Is(unicode.Mn, r):
			// "don't" → "dont"; combining accents vanish with their base kept.
		default:
			pendingSep = true
		}
	}
	slug := b.String()
	if in.MaxLength > 0 && utf8.RuneCountInString(slug) > in.MaxLength {
		rs := []rune(slug)
		cut := string(rs[:in.MaxLength])
		// Prefer ending at a word: drop the partial last word when there is one.
		if string(rs[in.MaxLength]) != sep {
			if i := strings.LastIndex(cut, sep); i > 0 {
				cut = cut[:i]
			}
		}
		slug = strings.TrimRight(cut, sep)
	}
	if slug == "" {
		hint := ""
		if !in.KeepCJK && strings.IndexFunc(in.Text, isCJK) >= 0 {
			hint = "; set keep_cjk to keep Chinese/Japanese characters"
		}
		return slugifyOut{}, sdk.Errorf("empty_slug", "text %q has no ASCII letters or digits to make a slug from%s", clip(in.Text, 40), hint)
	}
	return slugifyOut{Slug: slug}, nil
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}

// ---- case ----

type caseIn struct {
	Text string `json:"text" jsonschema_description:"Text to convert."`
	To   string `json:"to" jsonschema:"enum=upper,enum=lower,enum=title,enum=snake,enum=camel,enum=pascal,enum=kebab,enum=constant" jsonschema_description:"Target style: upper (HELLO WORLD), lower (hello world), title (Hello World), snake (hello_world), camel (helloWorld), pascal (HelloWorld), kebab (hello-world), constant (HELLO_WORLD)."`
}

type caseOut struct {
	Text string `json:"text"`
}

func convertCase(ctx context.Context, in caseIn) (caseOut, error) {
	if err := checkSize("text", in.Text); err != nil {
		return caseOut{}, err
	}
	var out string
	switch in.To {
	case "upper":
		out = strings.ToUpper(in.Text)
	case "lower":
		out = strings.ToLower(in.Text)
	case "title":
		out = titleCase(in.Text)
	case "snake", "camel", "pascal", "kebab", "constant":
		words, err := splitWords(ctx, in.Text)
		if err != nil {
			return caseOut{}, err
		}
		out = joinWords(words, in.To)
	default:
		return caseOut{}, sdk.Errorf("invalid_arguments", "to %q is not one of upper, lower, title, snake, camel, pascal, kebab, constant", in.To)
	}
	return caseOut{Text: out}, nil
}

// titleCase upper-cases the first letter of every word and lower-cases the
// rest, keeping all other characters where they are.
func titleCase(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1)
	inWord := false
	for _, r := range s {
		switch {
		case isWordRune(r):
			if inWord {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
			inWord = true
		case isApostrophe(r) && inWord && unicode.IsLetter(prev):
			b.WriteRune(r) // keep "don't" one word
		default:
			b.WriteRune(r)
			inWord = false
		}
		prev = r
	}
	return b.String()
}

// splitWords splits s into words for identifier styles: on anything that is
// not a letter or digit, at lower→upper humps ("fooBar"), before the last
// capital of an acronym ("HTTPServer" → HTTP, Server) and where CJK text
// meets other text ("用户Name" → 用户, Name). Apostrophes inside words vanish.
func splitWords(ctx context.Context, s string) ([]string, error) {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	tick := ticker{ctx: ctx}
	for i, r := range rs {
		if err := tick.err(); err != nil {
			return nil, err
		}
		if !isWordRune(r) {
			if !(isApostrophe(r) && len(cur) > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i+1])) {
				flush()
			}
			continue
		}
		if n := len(cur); n > 0 {
			prev := cur[n-1]
			switch {
			case isCJK(prev) != isCJK(r):
				flush()
			case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
				flush()
			case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words, nil
}

func capitalize(w string) string {
	r, n := utf8.DecodeRuneInString(w)
	return string(unicode.ToTitle(r)) + strings.ToLower(w[n:])
}

func joinWords(words []string, style string) string {
	out := make([]string, len(words))
	for i, w := range words {
		switch {
		case style == "constant":
			out[i] = strings.ToUpper(w)
		case style == "pascal" || (style == "camel" && i > 0):
			out[i] = capitalize(w)
		default:
			out[i] = strings.ToLower(w)
		}
	}
	switch style {
	case "snake", "constant":
		return strings.Join(out, "_")
	case "kebab":
		return strings.Join(out, "-")
	default:
		return strings.Join(out, "")
	}
}

// ---- truncate ----

type truncateIn struct {
	Text     string  `json:"text" jsonschema_description:"Text to shorten."`
	MaxRunes int     `json:"max_runes" jsonschema:"minimum=0" jsonschema_description:"Maximum length of the result in characters (Unicode code points), suffix included."`
	Suffix   *string `json:"suffix,omitempty" jsonschema_description:"Appended when the text is cut; default \"…\". Pass \"\" for none."`
	AtWord   bool    `json:"at_word,omitempty" jsonschema:"default=false" jsonschema_description:"Cut at the last word boundary (space, or between CJK characters) that fits, instead of mid-word."`
}

type truncateOut struct {
	Text          string `json:"text" jsonschema_description:"The result, at most max_runes characters."`
	Truncated     bool   `json:"truncated" jsonschema_description:"Whether the text was cut."`
	Runes         int    `json:"runes" jsonschema_description:"Length of the result in characters."`
	OriginalRunes int    `json:"original_runes" jsonschema_description:"Length of the input in characters."`
}

// joinsNext reports whether r glues itself to its neighbours, so that a cut
// must not fall right before it: combining marks, variation selectors,
// zero-width joiners and emoji skin-tone modifiers.
func joinsNext(r rune) bool {
	return unicode.Is(unicode.M, r) || r == '\u200d' || (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0x1f3fb && r <= 0x1f3ff)
}

func truncate(ctx context.Context, in truncateIn) (truncateOut, error) {
	if err := checkSize("text", in.Text); err != nil {
		return truncateOut{}, err
	}
	if in.MaxRunes < 0 {
		return truncateOut{}, sdk.Errorf("invalid_arguments", "max_runes %d must not be negative", in.MaxRunes)
	}
	suffix := "…"
	if in.Suffix != nil {
		suffix = *in.Suffix
	}
	rs := []rune(in.Text)
	out := truncateOut{OriginalRunes: len(rs)}
	if len(rs) <= in.MaxRunes {
		out.Text, out.Runes = in.Text, len(rs)
		return out, nil
	}
	sr := utf8.RuneCountInString(suffix)
	if sr > in.MaxRunes {
		return truncateOut{}, sdk.Errorf("invalid_arguments", "suffix %q has %d characters, more than max_runes %d", suffix, sr, in.MaxRunes)
	}
	cut := in.MaxRunes - sr
	// Step back over a joining sequence (é as e + U+0301, 👍🏽, 👨‍👩‍👧) so
	// it is kept whole or dropped whole.
	for cut > 0 && (joinsNext(rs[cut]) || rs[cut-1] == '\u200d') {
		if err := ctx.Err(); err != nil {
			return truncateOut{}, err
		}
		cut--
	}
	if in.AtWord {
		for k := cut; k > 0; k-- {
			if (k-cut)&4095 == 0 {
				if err := ctx.Err(); err != nil {
					return truncateOut{}, err
				}
			}
			a, b := rs[k-1], rs[k]
			if unicode.IsSpace(a) || unicode.IsSpace(b) || (isCJK(a) || isCJK(b)) && !joinsNext(b) {
				cut = k
				break
			}
		}
	}
	head := strings.TrimRightFunc(string(rs[:cut]), unicode.IsSpace)
	out.Text = head + suffix
	out.Truncated = true
	out.Runes = utf8.RuneCountInString(out.Text)
	return out, nil
}
