package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// The enum in the tags below must list exactly the keys of units, in
// unitOrder; TestUnitEnumMatchesTable keeps them in step.
type convertIn struct {
	Value float64 `json:"value" jsonschema_description:"The quantity to convert, e.g. 5 for 5 miles."`
	From  string  `json:"from" jsonschema:"enum=m,enum=km,enum=cm,enum=mm,enum=um,enum=nm,enum=mi,enum=yd,enum=ft,enum=in,enum=nmi,enum=kg,enum=g,enum=mg,enum=ug,enum=t,enum=lb,enum=oz,enum=st,enum=C,enum=F,enum=K,enum=ns,enum=us,enum=ms,enum=s,enum=min,enum=h,enum=d,enum=wk,enum=yr,enum=bit,enum=kbit,enum=Mbit,enum=Gbit,enum=B,enum=kB,enum=MB,enum=GB,enum=TB,enum=PB,enum=KiB,enum=MiB,enum=GiB,enum=TiB,enum=PiB" jsonschema_description:"Unit of value. Length: m km cm mm um nm mi yd ft in nmi (nautical mile). Mass: kg g mg ug t (tonne) lb oz st (stone). Temperature: C F K. Time: ns us ms s min h d wk yr (365.25 d). Data: bit kbit Mbit Gbit B kB MB GB TB PB (powers of 1000) KiB MiB GiB TiB PiB (powers of 1024)."`
	To    string  `json:"to" jsonschema:"enum=m,enum=km,enum=cm,enum=mm,enum=um,enum=nm,enum=mi,enum=yd,enum=ft,enum=in,enum=nmi,enum=kg,enum=g,enum=mg,enum=ug,enum=t,enum=lb,enum=oz,enum=st,enum=C,enum=F,enum=K,enum=ns,enum=us,enum=ms,enum=s,enum=min,enum=h,enum=d,enum=wk,enum=yr,enum=bit,enum=kbit,enum=Mbit,enum=Gbit,enum=B,enum=kB,enum=MB,enum=GB,enum=TB,enum=PB,enum=KiB,enum=MiB,enum=GiB,enum=TiB,enum=PiB" jsonschema_description:"Unit to convert to; must be the same kind (length, mass, temperature, time or data size) as from."`
}

type convertOut struct {
	Value     float64 `json:"value" jsonschema_description:"The converted quantity."`
	Formatted string  `json:"formatted" jsonschema_description:"The conversion as text, e.g. 5 mi = 8.04672 km."`
	Kind      string  `json:"kind" jsonschema:"enum=length,enum=mass,enum=temperature,enum=time,enum=data" jsonschema_description:"The kind of quantity."`
}

// unit converts to and from its kind's base unit (m, kg, K, s, bit):
// base = (v + offset) * factor. Only temperatures have an offset.
type unit struct {
	kind   string
	name   string
	factor float64
	offset float64
}

func (u unit) toBase(v float64) float64   { return (v + u.offset) * u.factor }
func (u unit) fromBase(b float64) float64 { return b/u.factor - u.offset }

var unitOrder = []string{
	"m", "km", "cm", "mm", "um", "nm", "mi", "yd", "ft", "in", "nmi",
	"kg", "g", "mg", "ug", "t", "lb", "oz", "st",
	"C", "F", "K",
	"ns", "us", "ms", "s", "min", "h", "d", "wk", "yr",
	"bit", "kbit", "Mbit", "Gbit", "B", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB",
}

var units = map[string]unit{
	"m":   {"length", "metre", 1, 0},
	"km":  {"length", "kilometre", 1e3, 0},
	"cm":  {"length", "centimetre", 1e-2, 0},
	"mm":  {"length", "millimetre", 1e-3, 0},
	"um":  {"length", "micrometre", 1e-6, 0},
	"nm":  {"length", "nanometre", 1e-9, 0},
	"mi":  {"length", "mile", 1609.344, 0},
	"yd":  {"length", "yard", 0.9144, 0},
	"ft":  {"length", "foot", 0.3048, 0},
	"in":  {"length", "inch", 0.0254, 0},
	"nmi": {"length", "nautical mile", 1852, 0},

	"kg": {"mass", "kilogram", 1, 0},
	"g":  {"mass", "gram", 1e-3, 0},
	"mg": {"mass", "milligram", 1e-6, 0},
	"ug": {"mass", "microgram", 1e-9, 0},
	"t":  {"mass", "tonne", 1e3, 0},
	"lb": {"mass", "pound", 0.45359237, 0},
	"oz": {"mass", "ounce", 0.45359237 / 16, 0},
	"st": {"mass", "stone", 0.45359237 * 14, 0},

	"C": {"temperature", "degree Celsius", 1, 273.15},
	"F": {"temperature", "degree Fahrenheit", 5.0 / 9.0, 459.67},
	"K": {"temperature", "kelvin", 1, 0},

	"ns":  {"time", "nanosecond", 1e-9, 0},
	"us":  {"time", "microsecond", 1e-6, 0},
	"ms":  {"time", "millisecond", 1e-3, 0},
	"s":   {"time", "second", 1, 0},
	"min": {"time", "minute", 60, 0},
	"h":   {"time", "hour", 3600, 0},
	"d":   {"time", "day", 86400, 0},
	"wk":  {"time", "week", 7 * 86400, 0},
	"yr":  {"time", "year (365.25 days)", 365.25 * 86400, 0},

	"bit":  {"data", "bit", 1, 0},
	"kbit": {"data", "kilobit", 1e3, 0},
	"Mbit": {"data", "megabit", 1e6, 0},
	"Gbit": {"data", "gigabit", 1e9, 0},
	"B":    {"data", "byte", 8, 0},
	"kB":   {"data", "kilobyte", 8e3, 0},
	"MB":   {"data", "megabyte", 8e6, 0},
	"GB":   {"data", "gigabyte", 8e9, 0},
	"TB":   {"data", "terabyte", 8e12, 0},
	"PB":   {"data", "petabyte", 8e15, 0},
	"KiB":  {"data", "kibibyte", 8 << 10, 0},
	"MiB":  {"data", "mebibyte", 8 << 20, 0},
	"GiB":  {"data", "gibibyte", 8 << 30, 0},
	"TiB":  {"data", "tebibyte", 8 << 40, 0},
	"PiB":  {"data", "pebibyte", 8 << 50, 0},
}

func lookupUnit(field, name string) (unit, error) {
	if u, ok := units[name]; ok {
		return u, nil
	}
	// Suggest the right spelling for a near miss such as "KM" or "kb".
	for _, k := range unitOrder {
		if strings.EqualFold(k, name) {
			return unit{}, sdk.Errorf("unknown_unit", "%s unit %q is not known; did you mean %q?", field, name, k)
		}
	}
	return unit{}, sdk.Errorf("unknown_unit", "%s unit %q is not known; use one of %s", field, name, strings.Join(unitOrder, ", "))
}

func convert(_ context.Context, in convertIn) (convertOut, error) {
	from, err := lookupUnit("from", in.From)
	if err != nil {
		return convertOut{}, err
	}
	to, err := lookupUnit("to", in.To)
	if err != nil {
		return convertOut{}, err
	}
	if from.kind != to.kind {
		return convertOut{}, sdk.Errorf("incompatible_units", "cannot convert %s (%s, a %s unit) to %s (%s, a %s unit)",
			in.From, from.name, from.kind, in.To, to.name, to.kind)
	}
	base := from.toBase(in.Value)
	if from.kind == "temperature" && base < 0 {
		return convertOut{}, sdk.Errorf("invalid_value", "%s %s is below absolute zero (-273.15 C)", formatNumber(in.Value), in.From)
	}
	v := to.fromBase(base)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return convertOut{}, sdk.Errorf("math_error", "%s %s in %s is too large to represent", formatNumber(in.Value), in.From, in.To)
	}
	if in.From == in.To {
		v = in.Value // exact, no round trip through the base unit
	} else {
		v = roundSignificant(v)
	}
	return convertOut{
		Value:     v,
		Formatted: fmt.Sprintf("%s %s = %s %s", formatNumber(in.Value), in.From, formatNumber(v), in.To),
		Kind:      from.kind,
	}, nil
}

// roundSignificant drops the binary noise a conversion through the base unit
// adds (100 C → 211.99999999999994 F) by keeping 15 significant digits.
func roundSignificant(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if err != nil {
		return v
	}
	return r
}
