package main

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk"
)

func TestEval(t *testing.T) {
	tests := []struct {
		expr string
		want float64
	}{
		{"1+2", 3},
		{"(2+3)*4", 20},
		{"2+3*4", 14},
		{"10 - 4 - 3", 3},
		{"2^10", 1024},
		{"2^3^2", 512}, // right-associative
		{"2**3", 8},
		{"-2^2", -4}, // unary minus binds looser than ^
		{"(-2)^2", 4},
		{"2^-1", 0.5},
		{"--3", 3},
		{"+5", 5},
		{"10 % 4", 2},
		{"-7 % 3", -1},
		{"7 / 2", 3.5},
		{"1.5e3 + .5", 1500.5},
		{"sqrt(16)", 4},
		{"abs(-3.5)", 3.5},
		{"round(2.5)", 3},
		{"round(pi, 2)", 3.14},
		{"floor(-1.5)", -2},
		{"ceil(1.2)", 2},
		{"sin(0)", 0},
		{"cos(0)", 1},
		{"tan(0)", 0},
		{"log(1000)", 3},
		{"log(8, 2)", 3},
		{"ln(e)", 1},
		{"exp(0)", 1},
		{"min(3, 1, 2)", 1},
		{"max(3, 1, 2) * 2", 6},
		{"PI", math.Pi},
		{"Sqrt(4)", 2},
		{"3 × 4 ÷ 2 − 1", 5},
		{"((((1))))", 1},
		{"max(1, min(5, 2+2))", 4},
	}
	for _, tt := range tests {
		got, err := Eval(context.Background(), tt.expr, false)
		if err != nil {
			t.Errorf("Eval(%q): %v", tt.expr, err)
			continue
		}
		if math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Eval(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestEvalDegrees(t *testing.T) {
	got, err := Eval(context.Background(), "sin(90) + cos(180)", true)
	if err != nil || math.Abs(got) > 1e-12 {
		t.Fatalf("sin(90)+cos(180) in degrees = %v, %v; want 0", got, err)
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		expr, code, msg string
	}{
		{"", "invalid_expression", "empty"},
		{"1 +", "invalid_expression", "position 4"},
		{"(1 + 2", "invalid_expression", "missing ')' for '(' at position 1"},
		{"1 + 2)", "invalid_expression", "position 6"},
		{"2 # 3", "invalid_expression", `unexpected character '#' at position 3`},
		{"2e", "invalid_expression", "position 2"},
		{"2(3)", "invalid_expression", "position 2"},
		{"foo(1)", "invalid_expression", `unknown function "foo" at position 1`},
		{"x + 1", "invalid_expression", `unknown name "x" at position 1`},
		{"sqrt 4", "invalid_expression", "needs parentheses"},
		{"sqrt(1, 2)", "invalid_expression", "takes 1 argument(s), got 2"},
		{"max()", "invalid_expression", "at least 1"},
		{"max(1,)", "invalid_expression", "position 7"},
		{"1 / 0", "division_by_zero", "position 3"},
		{"5 % (2 - 2)", "division_by_zero", "position 3"},
		{"0^-1", "division_by_zero", "position 2"},
		{"sqrt(-1)", "math_error", "negative"},
		{"ln(0)", "math_error", "non-positive"},
		{"log(8, 1)", "math_error", "base"},
		{"(-8)^(1/3)", "math_error", "fractional exponent"},
		{"10^400", "math_error", "overflow"},
		{"round(1, 0.5)", "math_error", "digits"},
		{strings.Repeat("1+", 600) + "1", "expression_too_long", "limit is 1000"},
		{strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200), "invalid_expression", "deeper than"},
		{strings.Repeat("-", 500) + "1", "invalid_expression", "deeper than"},
	}
	for _, tt := range tests {
		_, err := Eval(context.Background(), tt.expr, false)
		var se *sdk.Error
		if !errors.As(err, &se) {
			t.Errorf("Eval(%.30q) error = %v, want *sdk.Error", tt.expr, err)
			continue
		}
		if se.Code != tt.code || !strings.Contains(se.Message, tt.msg) {
			t.Errorf("Eval(%.30q) = %s: %s; want code %s, message containing %q", tt.expr, se.Code, se.Message, tt.code, tt.msg)
		}
	}
}

func TestEvalCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Eval(ctx, "1+1", false); !errors.Is(err, context.Canceled) {
		t.Fatalf("Eval with cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{
		0.1 + 0.2: "0.3",
		1024:      "1024",
		-3:        "-3",
		1e20:      "1e+20",
		1.0 / 3.0: "0.333333333333333",
	} {
		if got := formatNumber(v); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

// FuzzEval checks that no input panics or hangs the parser, and that every
// failure is a structured tool error.
func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2*3", "sqrt(2)^2", "max(1,2,(3))", "-(-(1))", "1e308*10", "((", "round(1.25, 1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Eval(context.Background(), s, false)
		if err != nil {
			var se *sdk.Error
			if !errors.As(err, &se) {
				t.Fatalf("Eval(%q) returned %T %v, want *sdk.Error", s, err, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Eval(%q) = %v without error", s, v)
		}
	})
}
