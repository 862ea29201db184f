package textindex

import "strings"

// stem reduces a lowercase English word to its Porter stem (M. F. Porter,
// "An algorithm for suffix stripping", 1980, with the published revisions:
// "bli"→"ble", "logi"→"log"). Words that are not plain ASCII letters, and
// words of two letters or fewer, are returned unchanged.
//
// Porter was chosen over an s-stemmer after measuring on BFCL (see
// TUNING.md): conflating "calculate"/"calculation"/"calculator" and
// "booking"/"book" matters for tool descriptions, and the usual Porter
// over-stemming ("general"→"gener") costs little on short texts.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	if s, ok := stemExceptions[w]; ok {
		return s
	}
	p := porter{b: []byte(w)}
	p.step1ab()
	if len(p.b) > 2 {
		p.step1c()
		p.step2()
		p.step3()
		p.step4()
		p.step5()
	}
	if string(p.b) == w {
		return w
	}
	return string(p.b)
}

// stemExceptions holds irregular forms that Porter handles badly and that
// are common in tool descriptions.
var stemExceptions = map[string]string{
	"news": "news",
	"data": "data",
	"bus":  "bus",
	"gas":  "gas",
}

type porter struct {
	b []byte
	j int // end of the stem (exclusive) once a suffix matched
}

// cons reports whether b[i] is a consonant.
func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		if i == 0 {
			return true
		}
		return !p.cons(i - 1)
	}
	return true
}

// m measures the number of consonant-vowel sequences in b[:j].
func (p *porter) m() int {
	n, i, j := 0, 0, p.j
	for {
		if i >= j {
			return n
		}
		if !p.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i >= j {
				return n
			}
			if p.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i >= j {
				return n
			}
			if !p.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[:j] contains a vowel.
func (p *porter) vowelInStem() bool {
	for i := 0; i < p.j; i++ {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[i-1:i+1] is a double consonant.
func (p *porter) doublec(i int) bool {
	if i < 1 || p.b[i] != p.b[i-1] {
		return false
	}
	return p.cons(i)
}

// cvc reports whether b[i-2:i+1] is consonant-vowel-consonant with the last
// consonant not w, x or y.
func (p *porter) cvc(i int) bool {
	if i < 2 || !p.cons(i) || p.cons(i-1) || !p.cons(i-2) {
		return false
	}
	switch p.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b ends with s, and sets j to the stem end if so.
func (p *porter) ends(s string) bool {
	if len(s) > len(p.b) || !strings.HasSuffix(string(p.b), s) {
		return false
	}
	p.j = len(p.b) - len(s)
	return true
}

// setTo replaces b[j:] with s.
func (p *porter) setTo(s string) {
	p.b = append(p.b[:p.j], s...)
}

// r replaces the suffix with s when m() > 0.
func (p *porter) r(s string) {
	if p.m() > 0 {
		p.setTo(s)
	}
}

func (p *porter) step1ab() {
	if p.b[len(p.b)-1] == 's' {
		switch {
		case p.ends("sses"):
			p.b = p.b[:len(p.b)-2]
		case p.ends("ies"):
			p.setTo("i")
		case len(p.b) >= 2 && p.b[len(p.b)-2] != 's':
			p.b = p.b[:len(p.b)-1]
		}
	}
	if p.ends("eed") {
		if p.m() > 0 {
			p.b = p.b[:len(p.b)-1]
		}
		return
	}
	if (p.ends("ed") || p.ends("ing")) && p.vowelInStem() {
		p.b = p.b[:p.j]
		p.j = len(p.b)
		switch {
		case p.ends("at"):
			p.setTo("ate")
		case p.ends("bl"):
			p.setTo("ble")
		case p.ends("iz"):
			p.setTo("ize")
		case p.doublec(len(p.b) - 1):
			switch p.b[len(p.b)-1] {
			case 'l', 's', 'z':
			default:
				p.b = p.b[:len(p.b)-1]
			}
		default:
			p.j = len(p.b)
			if p.m() == 1 && p.cvc(len(p.b)-1) {
				p.b = append(p.b, 'e')
			}
		}
	}
}

func (p *porter) step1c() {
	if p.ends("y") && p.vowelInStem() {
		p.b[len(p.b)-1] = 'i'
	}
}

var step2Rules = [...][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"logi", "log"},
}

func (p *porter) step2() {
	for _, rule := range step2Rules {
		if p.ends(rule[0]) {
			p.r(rule[1])
			return
		}
	}
}

var step3Rules = [...][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

func (p *porter) step3() {
	for _, rule := range step3Rules {
		if p.ends(rule[0]) {
			p.r(rule[1])
			return
		}
	}
}

var step4Suffixes = [...]string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func (p *porter) step4() {
	for _, suf := range step4Suffixes {
		if !p.ends(suf) {
			continue
		}
		if suf == "ion" && (p.j == 0 || (p.b[p.j-1] != 's' && p.b[p.j-1] != 't')) {
			return
		}
		if p.m() > 1 {
			p.b = p.b[:p.j]
		}
		return
	}
}

func (p *porter) step5() {
	p.j = len(p.b)
	if p.b[len(p.b)-1] == 'e' {
		p.j = len(p.b) - 1
		a := p.m()
		if a > 1 || (a == 1 && !p.cvc(len(p.b)-2)) {
			p.b = p.b[:len(p.b)-1]
		}
	}
	p.j = len(p.b)
	if p.b[len(p.b)-1] == 'l' && p.doublec(len(p.b)-1) && p.m() > 1 {
		p.b = p.b[:len(p.b)-1]
	}
}
