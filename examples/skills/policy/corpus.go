package main

import (
	"bufio"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// corpusFS holds the bundled policy documents. Markdown files carry a front
// matter block (id, title, lang, …) and one "## " heading per clause; JSON
// files hold the same fields with a "clauses" array.
//
//go:embed corpus/*.md corpus/*.json
var corpusFS embed.FS

// Document is one policy document.
type Document struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	TitleEn   string   `json:"title_en,omitempty"`
	Lang      string   `json:"lang"`
	Effective string   `json:"effective,omitempty"`
	Owner     string   `json:"owner,omitempty"`
	Source    string   `json:"-"` // path inside the skill, e.g. corpus/leave.md
	Clauses   []Clause `json:"clauses"`
}

// Clause is one numbered clause of a document.
type Clause struct {
	ID      string `json:"id"`      // "4" or "4.2"
	Label   string `json:"label"`   // as written: "第四条", "4."
	Heading string `json:"heading"` // without the number
	Text    string `json:"text"`
}

// Citation names the clause the way a reader would quote it.
func (d *Document) Citation(c *Clause) string {
	if d.Lang == "zh" {
		return "《" + d.Title + "》" + c.Label
	}
	return d.Title + " §" + c.ID
}

var docIDRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// loadCorpus parses every document in fsys under dir and checks that ids are
// well formed and unique. All problems are reported at once.
func loadCorpus(fsys fs.FS, dir string) ([]*Document, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	var docs []*Document
	var errs []error
	seen := map[string]string{}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var d *Document
		switch path.Ext(name) {
		case ".md":
			d, err = parseMarkdown(string(data))
		case ".json":
			d, err = parseJSON(data)
		default:
			continue
		}
		if err == nil {
			err = d.check()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if prev, dup := seen[d.ID]; dup {
			errs = append(errs, fmt.Errorf("%s: document id %q already used by %s", name, d.ID, prev))
			continue
		}
		seen[d.ID] = name
		d.Source = name
		docs = append(docs, d)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, nil
}

func (d *Document) check() error {
	var errs []error
	if !docIDRE.MatchString(d.ID) {
		errs = append(errs, fmt.Errorf("id %q must be lowercase words joined by -", d.ID))
	}
	if d.Title == "" {
		errs = append(errs, errors.New("title is missing"))
	}
	if d.Lang != "zh" && d.Lang != "en" {
		errs = append(errs, fmt.Errorf("lang %q must be zh or en", d.Lang))
	}
	if len(d.Clauses) == 0 {
		errs = append(errs, errors.New("no clauses"))
	}
	ids := map[string]bool{}
	for _, c := range d.Clauses {
		if c.ID == "" || strings.TrimSpace(c.Text) == "" {
			errs = append(errs, fmt.Errorf("clause %q has no id or no text", c.Heading))
		}
		if ids[c.ID] {
			errs = append(errs, fmt.Errorf("clause id %q appears twice", c.ID))
		}
		ids[c.ID] = true
	}
	return errors.Join(errs...)
}

func parseJSON(data []byte) (*Document, error) {
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	for i := range d.Clauses {
		if d.Clauses[i].Label == "" {
			d.Clauses[i].Label = d.Clauses[i].ID + "."
		}
	}
	return &d, nil
}

// parseMarkdown reads front matter ("key: value" lines between --- lines)
// and clauses: each "## " heading starts a clause whose id comes from the
// heading's number ("## 第四条 报销标准", "## 4. Equipment", "## 4.2 Laptops").
// Text before the first clause heading (the "# Title" line) is ignored.
func parseMarkdown(src string) (*Document, error) {
	d := &Document{}
	sc := bufio.NewScanner(strings.NewReader(src))
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return strings.TrimRight(sc.Text(), " \t\r"), true
	}
	if l, ok := next(); !ok || l != "---" {
		return nil, errors.New("line 1: front matter must start with ---")
	}
	for {
		l, ok := next()
		if !ok {
			return nil, errors.New("front matter is not closed with ---")
		}
		if l == "---" {
			break
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: front matter line %q is not key: value", line, l)
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "id":
			d.ID = v
		case "title":
			d.Title = v
		case "title_en":
			d.TitleEn = v
		case "lang":
			d.Lang = v
		case "effective":
			d.Effective = v
		case "owner":
			d.Owner = v
		default:
			return nil, fmt.Errorf("line %d: unknown front matter key %q", line, k)
		}
	}
	var cur *Clause
	var body []string
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(strings.Join(body, "\n"))
			d.Clauses = append(d.Clauses, *cur)
		}
		body = body[:0]
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if h, isClause := strings.CutPrefix(l, "## "); isClause {
			flush()
			id, label, heading, ok := parseClauseHeading(h)
			if !ok {
				return nil, fmt.Errorf("line %d: clause heading %q does not start with a number (such as 第三条 or \"3.\")", line, h)
			}
			cur = &Clause{ID: id, Label: label, Heading: heading}
			continue
		}
		if cur != nil {
			body = append(body, l)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

var (
	cnClauseRE = regexp.MustCompile(`^第([0-9零〇一二两三四五六七八九十百]+)条\s*(.*)$`)
	enClauseRE = regexp.MustCompile(`^(?:§\s*|(?i:clause|section|article)\s+)?(\d+(?:\.\d+)*)\.?\s*(.*)$`)
)

// parseClauseHeading splits a heading into clause id, label and heading text.
func parseClauseHeading(h string) (id, label, heading string, ok bool) {
	h = strings.TrimSpace(h)
	if m := cnClauseRE.FindStringSubmatch(h); m != nil {
		n, ok := parseChineseNumber(m[1])
		if !ok {
			return "", "", "", false
		}
		return strconv.Itoa(n), "第" + m[1] + "条", strings.TrimSpace(m[2]), true
	}
	if m := enClauseRE.FindStringSubmatch(h); m != nil {
		return m[1], m[1] + ".", strings.TrimSpace(m[2]), true
	}
	return "", "", "", false
}

// normalizeClauseID accepts what a user or model might write for a clause:
// "4", "4.2", "第四条", "第4条", "§4", "clause 4", "Section 4.2".
func normalizeClauseID(s string) string {
	s = strings.TrimSpace(s)
	if id, _, _, ok := parseClauseHeading(s); ok {
		return id
	}
	if n, ok := parseChineseNumber(s); ok {
		return strconv.Itoa(n)
	}
	return s
}

var cnDigits = map[rune]int{'零': 0, '〇': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}

// parseChineseNumber reads Arabic digits or Chinese numerals below 1000
// (十 = 10, 十二 = 12, 二十 = 20, 一百零五 = 105).
func parseChineseNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return n, true
	}
	if s == "" {
		return 0, false
	}
	total, digit, seenDigit := 0, 0, false
	for _, r := range s {
		switch r {
		case '十':
			if !seenDigit {
				digit = 1
			}
			total += digit * 10
			digit, seenDigit = 0, false
		case '百':
			if !seenDigit {
				return 0, false
			}
			total += digit * 100
			digit, seenDigit = 0, false
		default:
			v, ok := cnDigits[r]
			if !ok {
				return 0, false
			}
			digit, seenDigit = v, true
		}
	}
	return total + digit, true
}
