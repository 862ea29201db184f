package main

import (
	"context"

	"github.com/skillhost/skillhost/sdk"
)

// newSkill builds the skill; tests serve it in-process with skilltest.Start.
func newSkill() *sdk.Skill {
	s := sdk.New("calc", "1.0.0",
		"Calculator: evaluate arithmetic expressions (+ - * / % ^, parentheses, sqrt, sin, log, min, max, pi, e) "+
			"and convert units of length, mass, temperature, time and data size. 计算器：算式求值与单位换算。")
	s.Tags = []string{"math", "calculator", "arithmetic", "计算"}
	s.Author = "skillhost examples"

	sdk.Tool(s, "evaluate",
		"Calculate: evaluate an arithmetic expression such as (2+3)*4, 2^10 % 7, sqrt(2) or max(3, 4.5) * pi and return the number; "+
			"add (plus), subtract (minus), multiply (times), divide (divided by), percentages and powers (计算 加 减 乘 除). "+
			"Operators: + - * / % ^ (power, right-associative), unary minus, parentheses. "+
			"Functions: sqrt abs round floor ceil sin cos tan log (base 10, or log(x, base)) ln exp min max; constants pi, e. "+
			"Angles are in radians unless angle_unit is deg. Use this instead of doing arithmetic in your head.",
		func(ctx context.Context, in evaluateIn) (evaluateOut, error) { return evaluate(ctx, in) },
		sdk.ReadOnly(), sdk.WithTags("expression", "算式"))

	sdk.Tool(s, "convert_units",
		"Convert a value between units of the same kind: length (m, km, cm, mm, mi, ft, in, …), mass (kg, g, lb, oz, …), "+
			"temperature (C, F, K), time (s, min, h, d, …) and data size (B, kB, MB, GiB, bit, …). "+
			"For example 5 mi to km, 100 F to C, or 1.5 GiB to MB. 单位换算。",
		func(ctx context.Context, in convertIn) (convertOut, error) { return convert(ctx, in) },
		sdk.ReadOnly(), sdk.WithTags("units", "conversion", "单位换算"))
	return s
}

func main() { newSkill().Serve() }
