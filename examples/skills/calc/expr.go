package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

// Limits that keep one call cheap whatever a model sends.
const (
	maxExprRunes = 1000 // longer input is refused before lexing
	maxDepth     = 100  // nesting of parentheses, unary minus and powers
)

type evaluateIn struct {
	Expression string `json:"expression" jsonschema:"minLength=1,maxLength=1000,example=(2+3)*4,example=sqrt(2)/2" jsonschema_description:"Arithmetic expression, e.g. (2+3)*4, 2^-1, 10 % 4, round(pi, 3), max(1, 2, 3). Numbers may use exponents (1.5e3)."`
	AngleUnit  string `json:"angle_unit,omitempty" jsonschema:"enum=rad,enum=deg,default=rad" jsonschema_description:"Unit for the arguments of sin, cos and tan: rad (default) or deg."`
}

type evaluateOut struct {
	Result    float64 `json:"result" jsonschema_description:"The value of the expression."`
	Formatted string  `json:"formatted" jsonschema_description:"The value with at most 15 significant digits, e.g. 0.3 for 0.1+0.2."`
}

func evaluate(ctx context.Context, in evaluateIn) (evaluateOut, error) {
	deg := false
	switch in.AngleUnit {
	case "", "rad":
	case "deg":
		deg = true
	default:
		return evaluateOut{}, sdk.Errorf("invalid_arguments", "angle_unit %q is not rad or deg", in.AngleUnit)
	}
	v, err := Eval(ctx, in.Expression, deg)
	if err != nil {
		return evaluateOut{}, err
	}
	return evaluateOut{Result: v, Formatted: formatNumber(v)}, nil
}

// formatNumber prints integers exactly and everything else with 15
// significant digits, which hides binary rounding noise such as 0.1+0.2.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 15, 64)
}

// Eval evaluates expr. Angles are radians unless deg is set. Errors are
// *sdk.Error with code invalid_expression, division_by_zero or math_error
// and a 1-based character position; a cancelled ctx returns ctx.Err().
func Eval(ctx context.Context, expr string, deg bool) (float64, error) {
	if strings.TrimSpace(expr) == "" {
		return 0, sdk.Errorf("invalid_expression", "expression is empty")
	}
	if n := utf8.RuneCountInString(expr); n > maxExprRunes {
		return 0, sdk.Errorf("expression_too_long", "expression has %d characters; the limit is %d", n, maxExprRunes)
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{ctx: ctx, toks: toks, deg: deg}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return 0, p.unexpected(t, "an operator or the end of the expression")
	}
	if math.IsNaN(v) {
		return 0, sdk.Errorf("math_error", "the result is not a number")
	}
	if math.IsInf(v, 0) {
		return 0, sdk.Errorf("math_error", "the result is too large (overflow)")
	}
	if v == 0 {
		v = 0 // normalise -0
	}
	return v, nil
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokNum
	tokIdent
	tokOp // one of + - * / % ^
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokenKind
	text string  // source text (identifiers lowercased, operators normalised)
	num  float64 // for tokNum
	pos  int     // 1-based character position in the input
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokIdent:
		return "name " + strconv.Quote(t.text)
	default:
		return strconv.Quote(t.text)
	}
}

// opAliases maps characters people paste from documents to the ASCII operators.
var opAliases = map[rune]string{
	'+': "+", '-': "-", '*': "*", '/': "/", '%': "%", '^': "^",
	'−': "-", '×': "*", '·': "*", '÷': "/",
}

func lex(s string) ([]token, error) {
	rs := []rune(s)
	var toks []token
	for i := 0; i < len(rs); {
		r, pos := rs[i], i+1
		switch {
		case unicode.IsSpace(r):
			i++
		case isDigit(r) || (r == '.' && i+1 < len(rs) && isDigit(rs[i+1])):
			j := i
			for j < len(rs) && isDigit(rs[j]) {
				j++
			}
			if j < len(rs) && rs[j] == '.' {
				j++
				for j < len(rs) && isDigit(rs[j]) {
					j++
				}
			}
			// An exponent only when digits follow, so "2e" stays 2 followed by the constant e.
			if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
				k := j + 1
				if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
					k++
				}
				if k < len(rs) && isDigit(rs[k]) {
					for k < len(rs) && isDigit(rs[k]) {
						k++
					}
					j = k
				}
			}
			text := string(rs[i:j])
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, sdk.Errorf("invalid_expression", "bad number %q at position %d", text, pos)
			}
			toks = append(toks, token{kind: tokNum, text: text, num: v, pos: pos})
			i = j
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || isDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(string(rs[i:j])), pos: pos})
			i = j
		case r == '(':
			toks = append(toks, token{kind: tokLParen, text: "(", pos: pos})
			i++
		case r == ')':
			toks = append(toks, token{kind: tokRParen, text: ")", pos: pos})
			i++
		case r == ',':
			toks = append(toks, token{kind: tokComma, text: ",", pos: pos})
			i++
		case r == '*' && i+1 < len(rs) && rs[i+1] == '*': // ** as power
			toks = append(toks, token{kind: tokOp, text: "^", pos: pos})
			i += 2
		default:
			op, ok := opAliases[r]
			if !ok {
				return nil, sdk.Errorf("invalid_expression", "unexpected character %q at position %d", r, pos)
			}
			toks = append(toks, token{kind: tokOp, text: op, pos: pos})
			i++
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs) + 1}), nil
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// parser is a recursive-descent evaluator over the grammar
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]          (right-associative; -2^2 = -4)
//	primary = number | name | name "(" [ expr { "," expr } ] ")" | "(" expr ")"
//
// It computes values while parsing; there is no tree to walk afterwards.
type parser struct {
	ctx   context.Context
	toks  []token
	i     int
	depth int
	deg   bool
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() (token, error) {
	if err := p.ctx.Err(); err != nil {
		return token{}, err
	}
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t, nil
}

func (p *parser) unexpected(t token, want string) error {
	return sdk.Errorf("invalid_expression", "expected %s at position %d, found %s", want, t.pos, t.describe())
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxDepth {
		return sdk.Errorf("invalid_expression", "expression nests deeper than %d levels at position %d", maxDepth, pos)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for t := p.peek(); t.kind == tokOp && (t.text == "+" || t.text == "-"); t = p.peek() {
		if _, err := p.next(); err != nil {
			return 0, err
		}
		w, err := p.term()
		if err != nil {
			return 0, err
		}
		if t.text == "+" {
			v += w
		} else {
			v -= w
		}
		if err := checkOverflow(v, t); err != nil {
			return 0, err
		}
	}
	return v, nil
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for t := p.peek(); t.kind == tokOp && (t.text == "*" || t.text == "/" || t.text == "%"); t = p.peek() {
		if _, err := p.next(); err != nil {
			return 0, err
		}
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		switch t.text {
		case "*":
			v *= w
		case "/":
			if w == 0 {
				return 0, sdk.Errorf("division_by_zero", "division by zero at position %d", t.pos)
			}
			v /= w
		case "%":
			if w == 0 {
				return 0, sdk.Errorf("division_by_zero", "modulo by zero at position %d", t.pos)
			}
			v = math.Mod(v, w)
		}
		if err := checkOverflow(v, t); err != nil {
			return 0, err
		}
	}
	return v, nil
}

func (p *parser) unary() (float64, error) {
	t := p.peek()
	if t.kind == tokOp && (t.text == "-" || t.text == "+") {
		if err := p.enter(t.pos); err != nil {
			return 0, err
		}
		defer p.leave()
		if _, err := p.next(); err != nil {
			return 0, err
		}
		v, err := p.unary()
		if err != nil {
			return 0, err
		}
		if t.text == "-" {
			v = -v
		}
		return v, nil
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	t := p.peek()
	if t.kind != tokOp || t.text != "^" {
		return base, nil
	}
	if err := p.enter(t.pos); err != nil {
		return 0, err
	}
	defer p.leave()
	if _, err := p.next(); err != nil {
		return 0, err
	}
	exp, err := p.unary()
	if err != nil {
		return 0, err
	}
	v := math.Pow(base, exp)
	switch {
	case base == 0 && exp < 0:
		return 0, sdk.Errorf("division_by_zero", "0 raised to a negative power at position %d", t.pos)
	case math.IsNaN(v) && !math.IsNaN(base) && !math.IsNaN(exp):
		return 0, sdk.Errorf("math_error", "negative base %s with fractional exponent %s at position %d", formatNumber(base), formatNumber(exp), t.pos)
	}
	return v, checkOverflow(v, t)
}

func (p *parser) primary() (float64, error) {
	t, err := p.next()
	if err != nil {
		return 0, err
	}
	switch t.kind {
	case tokNum:
		return t.num, nil
	case tokLParen:
		if err := p.enter(t.pos); err != nil {
			return 0, err
		}
		defer p.leave()
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if c := p.peek(); c.kind != tokRParen {
			return 0, sdk.Errorf("invalid_expression", "missing ')' for '(' at position %d: found %s at position %d", t.pos, c.describe(), c.pos)
		}
		_, err = p.next()
		return v, err
	case tokIdent:
		if p.peek().kind == tokLParen {
			return p.call(t)
		}
		if c, ok := constants[t.text]; ok {
			return c, nil
		}
		if _, ok := functions[t.text]; ok {
			return 0, sdk.Errorf("invalid_expression", "function %s at position %d needs parentheses, e.g. %s(x)", t.text, t.pos, t.text)
		}
		return 0, sdk.Errorf("invalid_expression", "unknown name %q at position %d (constants: pi, e; functions: %s)", t.text, t.pos, functionList())
	case tokRParen:
		return 0, sdk.Errorf("invalid_expression", "unexpected ')' at position %d", t.pos)
	default:
		return 0, p.unexpected(t, "a number, name or '('")
	}
}

func (p *parser) call(name token) (float64, error) {
	fn, ok := functions[name.text]
	if !ok {
		return 0, sdk.Errorf("invalid_expression", "unknown function %q at position %d (functions: %s)", name.text, name.pos, functionList())
	}
	if err := p.enter(name.pos); err != nil {
		return 0, err
	}
	defer p.leave()
	open, err := p.next() // "("
	if err != nil {
		return 0, err
	}
	var args []float64
	if p.peek().kind != tokRParen {
		for {
			v, err := p.expr()
			if err != nil {
				return 0, err
			}
			args = append(args, v)
			if p.peek().kind != tokComma {
				break
			}
			if _, err := p.next(); err != nil {
				return 0, err
			}
		}
	}
	if c := p.peek(); c.kind != tokRParen {
		return 0, sdk.Errorf("invalid_expression", "missing ')' for %s( at position %d: found %s at position %d", name.text, open.pos, c.describe(), c.pos)
	}
	if _, err := p.next(); err != nil {
		return 0, err
	}
	if len(args) < fn.minArgs || (fn.maxArgs >= 0 && len(args) > fn.maxArgs) {
		return 0, sdk.Errorf("invalid_expression", "%s at position %d takes %s, got %d", name.text, name.pos, fn.arity(), len(args))
	}
	if p.deg && fn.angle {
		args[0] = args[0] * math.Pi / 180
	}
	v, msg := fn.f(args)
	if msg != "" {
		return 0, sdk.Errorf("math_error", "%s at position %d: %s", name.text, name.pos, msg)
	}
	return v, checkOverflow(v, name)
}

func checkOverflow(v float64, at token) error {
	if math.IsInf(v, 0) {
		return sdk.Errorf("math_error", "overflow at position %d: the value is too large", at.pos)
	}
	return nil
}

var constants = map[string]float64{"pi": math.Pi, "e": math.E}

type function struct {
	minArgs, maxArgs int  // maxArgs < 0: variadic
	angle            bool // first argument is an angle (converted from degrees on request)
	// f returns the value, or a non-empty message for a domain error.
	f func(args []float64) (float64, string)
}

func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d argument(s)", f.minArgs)
	default:
		return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
	}
}

func fn1(f func(float64) float64) func([]float64) (float64, string) {
	return func(a []float64) (float64, string) { return f(a[0]), "" }
}

var functions = map[string]function{
	"sqrt": {1, 1, false, func(a []float64) (float64, string) {
		if a[0] < 0 {
			return 0, "square root of negative number " + formatNumber(a[0])
		}
		return math.Sqrt(a[0]), ""
	}},
	"abs":   {1, 1, false, fn1(math.Abs)},
	"floor": {1, 1, false, fn1(math.Floor)},
	"ceil":  {1, 1, false, fn1(math.Ceil)},
	"round": {1, 2, false, func(a []float64) (float64, string) {
		if len(a) == 1 {
			return math.Round(a[0]), ""
		}
		d := a[1]
		if d != math.Trunc(d) || d < 0 || d > 15 {
			return 0, "digits must be a whole number from 0 to 15, got " + formatNumber(d)
		}
		scale := math.Pow(10, d)
		return math.Round(a[0]*scale) / scale, ""
	}},
	"sin": {1, 1, true, fn1(math.Sin)},
	"cos": {1, 1, true, fn1(math.Cos)},
	"tan": {1, 1, true, fn1(math.Tan)},
	"log": {1, 2, false, func(a []float64) (float64, string) {
		if a[0] <= 0 {
			return 0, "logarithm of non-positive number " + formatNumber(a[0])
		}
		if len(a) == 1 {
			return math.Log10(a[0]), ""
		}
		if a[1] <= 0 || a[1] == 1 {
			return 0, "logarithm base must be positive and not 1, got " + formatNumber(a[1])
		}
		return math.Log(a[0]) / math.Log(a[1]), ""
	}},
	"ln": {1, 1, false, func(a []float64) (float64, string) {
		if a[0] <= 0 {
			return 0, "logarithm of non-positive number " + formatNumber(a[0])
		}
		return math.Log(a[0]), ""
	}},
	"exp": {1, 1, false, fn1(math.Exp)},
	"min": {1, -1, false, func(a []float64) (float64, string) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Min(m, v)
		}
		return m, ""
	}},
	"max": {1, -1, false, func(a []float64) (float64, string) {
		m := a[0]
		for _, v := range a[1:] {
			m = math.Max(m, v)
		}
		return m, ""
	}},
}

func functionList() string {
	names := make([]string, 0, len(functions))
	for n := range functions {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
