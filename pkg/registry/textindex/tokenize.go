package textindex

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize returns the index terms of s, in order, exactly as the index and
// queries see them: lowercased, identifiers split (snake_case, camelCase,
// dots, letter/digit boundaries), stopwords and one-letter words dropped,
// English words stemmed, CJK runs emitted as unigrams followed by
// overlapping bigrams, and the operators of arithmetic expressions emitted
// as words (see arithmeticOps).
func Tokenize(s string) []string {
	var out []string
	forEachTerm(s, func(t string) { out = append(out, t) })
	return out
}

// forEachTerm calls fn with every index term of s.
func forEachTerm(s string, fn func(string)) {
	forEachPiece(s, func(w string, kind pieceKind) {
		switch kind {
		case pieceCJK:
			emitCJK(w, fn)
		case pieceCompound:
			fn(w)
		default:
			if t, ok := normalizeWord(w); ok {
				fn(t)
			}
		}
	})
}

// normalizeWord turns a lowercased Latin/digit piece into a term, or reports
// that the piece carries no signal (stopword, single letter).
func normalizeWord(w string) (string, bool) {
	if len(w) < 2 {
		return "", false
	}
	if _, stop := stopwords[w]; stop {
		return "", false
	}
	if isDigits(w) {
		// Numbers in requests are argument values ("radius of 4"), and in
		// tool names version tags ("Flights_4_..."): both only add noise.
		return "", false
	}
	return stem(w), true
}

func isDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

// emitCJK emits the unigrams and then the bigrams of a run of CJK runes.
// Chinese and Japanese have no spaces between words and most words are one
// or two characters long, so unigrams give recall and bigrams precision.
func emitCJK(run string, fn func(string)) {
	n := 0
	for i := 0; i < len(run); {
		_, sz := utf8.DecodeRuneInString(run[i:])
		fn(run[i : i+sz])
		i += sz
		n++
	}
	if n < 2 {
		return
	}
	prev := 0
	_, sz := utf8.DecodeRuneInString(run)
	cur := sz
	for cur < len(run) {
		_, sz := utf8.DecodeRuneInString(run[cur:])
		fn(run[prev : cur+sz])
		prev = cur
		cur += sz
	}
}

// charClass is the tokenizer's view of a rune.
type charClass uint8

const (
	clsSep   charClass = iota
	clsLower           // lowercase letter, or a letter without case
	clsUpper
	clsDigit
	clsCJK
)

func classify(r rune) charClass {
	switch {
	case r < utf8.RuneSelf:
		switch {
		case 'a' <= r && r <= 'z':
			return clsLower
		case 'A' <= r && r <= 'Z':
			return clsUpper
		case '0' <= r && r <= '9':
			return clsDigit
		}
		return clsSep
	case isCJK(r):
		return clsCJK
	case unicode.IsUpper(r):
		return clsUpper
	case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
		return clsLower
	case unicode.IsDigit(r):
		return clsDigit
	}
	return clsSep
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// pieceKind tells what forEachPiece found.
type pieceKind uint8

const (
	pieceWord     pieceKind = iota // letters or digits, lowercased
	pieceCJK                       // a run of CJK runes
	pieceCompound                  // a short letters+digits token as written ("mp3", "s3", "ipv4"), lowercased
)

// maxCompound is the longest letters+digits token kept whole besides its
// parts; longer ones are identifiers whose parts carry the meaning.
const maxCompound = 8

// forEachPiece splits s into lowercased pieces. A piece is either a run of
// CJK runes or a word: a run of letters of one "shape" or of digits. Word
// boundaries fall at separators, lower→Upper ("getUser"), the last capital
// of an acronym before a lowercase letter ("HTTPServer" → "http",
// "server"), and letter↔digit changes ("v2" → "v", "2"). A short token that
// mixes letters and digits is also emitted whole, after its parts, because
// "s3" or "mp3" mean more than "s" and "3".
func forEachPiece(s string, fn func(piece string, kind pieceKind)) {
	var buf strings.Builder
	start := -1 // byte offset of the current piece in s
	var startCls charClass
	prevCls := clsSep
	prevStart := 0 // byte offset of the previous rune

	ops := arithmeticOps(s)
	seg := -1 // byte offset of the current letters/digits token
	var segLetter, segDigit bool

	flush := func(end int) {
		if start < 0 {
			return
		}
		piece := s[start:end]
		if startCls == clsCJK {
			fn(piece, pieceCJK)
		} else {
			fn(lower(piece, &buf), pieceWord)
		}
		start = -1
	}
	endSeg := func(end int) {
		if seg >= 0 && segLetter && segDigit && end-seg <= maxCompound {
			fn(lower(s[seg:end], &buf), pieceCompound)
		}
		seg, segLetter, segDigit = -1, false, false
	}

	for i, r := range s {
		c := classify(r)
		if len(ops) > 0 && ops[0].at == i {
			endSeg(i)
			flush(i)
			fn(ops[0].word, pieceWord)
			ops = ops[1:]
		}
		switch c {
		case clsSep, clsCJK:
			endSeg(i)
		default:
			if seg < 0 {
				seg = i
			}
			if c == clsDigit {
				segDigit = true
			} else {
				segLetter = true
			}
		}
		switch {
		case c == clsSep:
			flush(i)
		case start < 0:
			start, startCls = i, c
		case c == clsCJK || prevCls == clsCJK:
			if (c == clsCJK) != (prevCls == clsCJK) {
				flush(i)
				start, startCls = i, c
			}
		case c == clsDigit || prevCls == clsDigit:
			if (c == clsDigit) != (prevCls == clsDigit) {
				flush(i)
				start, startCls = i, c
			}
		case c == clsUpper && prevCls == clsLower:
			flush(i)
			start, startCls = i, c
		case c == clsLower && prevCls == clsUpper && prevStart > start:
			// "HTTPServer": the 'S' starts the new word.
			flush(prevStart)
			start, startCls = prevStart, clsUpper
		}
		if c != clsSep {
			prevCls = c
		} else {
			prevCls = clsSep
		}
		prevStart = i
	}
	flush(len(s))
	endSeg(len(s))
}

// opWord is the word an arithmetic operator is read as, or "".
func opWord(r rune) string {
	switch r {
	case '+':
		return "plus"
	case '-', '−':
		return "minus"
	case '*', '×', '·':
		return "times"
	case '/', '÷':
		return "divided"
	case '^':
		return "power"
	case '%':
		return "modulo"
	}
	return ""
}

// opAt is an arithmetic operator found in a text: its byte offset and word.
type opAt struct {
	at   int
	word string
}

// arithmeticOps finds the binary operators of the arithmetic expressions in
// s, so that "17*23+4" reads as "17 times 23 plus 4" and a bare expression
// still finds a calculator. An operator counts when a number or ")" stands
// before it and a number or "(" after it (spaces allowed). A "-" or "/"
// written tight between two numbers is ambiguous: it also writes dates,
// ranges and identifiers ("2023-04-27", "05/12/2023", "2019-2020"). An
// expression (a run of numbers, spaces, parentheses and operators, ended by
// anything else, a comma too) gives words only if it holds an operator that
// is not ambiguous. The hyphen in "e-mail", the slash in "m/s" and the sign
// in "b=-3" have no number on one side and stay separators.
func arithmeticOps(s string) []opAt {
	if !strings.ContainsAny(s, "+-*/^%×÷−·") {
		return nil
	}
	var out, run []opAt
	ambiguous := true // every operator of run is a tight "-" or "/" between numbers
	endRun := func() {
		if !ambiguous {
			out = append(out, run...)
		}
		run, ambiguous = run[:0], true
	}
	for i, r := range s {
		w := opWord(r)
		if w == "" {
			if !(r == ' ' || r == '.' || r == '(' || r == ')' || r < utf8.RuneSelf && isDigitByte(byte(r))) {
				endRun()
			}
			continue
		}
		j := i - 1
		for j >= 0 && s[j] == ' ' {
			j--
		}
		k := i + utf8.RuneLen(r)
		for k < len(s) && s[k] == ' ' {
			k++
		}
		left := j >= 0 && (isDigitByte(s[j]) || s[j] == ')')
		right := k < len(s) && (isDigitByte(s[k]) || s[k] == '(' || s[k] == '.' && k+1 < len(s) && isDigitByte(s[k+1]))
		if !left || !right {
			endRun()
			continue
		}
		tight := j == i-1 && k == i+utf8.RuneLen(r) && isDigitByte(s[j]) && isDigitByte(s[k])
		if !tight || (r != '-' && r != '/') {
			ambiguous = false
		}
		run = append(run, opAt{at: i, word: w})
	}
	endRun()
	return out
}

func isDigitByte(b byte) bool { return '0' <= b && b <= '9' }

// lower lowercases an already-split word with no allocation when it is
// already lowercase ASCII.
func lower(w string, buf *strings.Builder) string {
	ascii, hasUpper := true, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= c && c <= 'Z' {
			hasUpper = true
		}
	}
	if ascii && !hasUpper {
		return w
	}
	if !ascii {
		return strings.ToLower(w)
	}
	buf.Reset()
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf.WriteByte(c)
	}
	return buf.String()
}

// stopwords are English function words that carry no signal for picking a
// tool. Content words that look generic ("get", "find", "list") are kept:
// tool names are built from them and IDF already discounts them.
var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`
a about above after again against all am an and any are aren as at be because been before being
below between both but by can could couldn did didn do does doesn doing don down during each few for
from further had has have having he her here hers herself him himself his how i if in into is isn it
its itself just let ll me might more most must my myself no nor not now of off on once only or other
our ours ourselves out over own please re same shall she should so some such than that the their
theirs them themselves then there these they this those through to too under until up us ve very was
we were what when where which while who whom why will with would you your yours yourself yourselves
also e.g eg ie etc`) {
		m[w] = struct{}{}
	}
	return m
}()
