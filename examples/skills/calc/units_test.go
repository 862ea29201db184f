package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		v        float64
		from, to string
		want     float64
	}{
		{5, "mi", "km", 8.04672},
		{1, "km", "m", 1000},
		{12, "in", "ft", 1},
		{1, "nmi", "m", 1852},
		{1, "lb", "g", 453.59237},
		{16, "oz", "lb", 1},
		{1, "t", "kg", 1000},
		{100, "C", "F", 212},
		{32, "F", "C", 0},
		{0, "K", "C", -273.15},
		{-40, "C", "F", -40},
		{90, "min", "h", 1.5},
		{1, "wk", "d", 7},
		{1, "GiB", "MiB", 1024},
		{1.5, "GiB", "MB", 1610.612736},
		{1, "B", "bit", 8},
		{100, "Mbit", "MB", 12.5},
		{3, "kg", "kg", 3},
	}
	for _, tt := range tests {
		out, err := convert(context.Background(), convertIn{Value: tt.v, From: tt.from, To: tt.to})
		if err != nil {
			t.Errorf("convert %v %s→%s: %v", tt.v, tt.from, tt.to, err)
			continue
		}
		if math.Abs(out.Value-tt.want) > 1e-9*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("convert %v %s→%s = %v, want %v", tt.v, tt.from, tt.to, out.Value, tt.want)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		in        convertIn
		code, msg string
	}{
		{convertIn{1, "kg", "m"}, "incompatible_units", "cannot convert kg (kilogram, a mass unit) to m (metre, a length unit)"},
		{convertIn{1, "C", "s"}, "incompatible_units", "temperature"},
		{convertIn{1, "furlong", "m"}, "unknown_unit", `from unit "furlong"`},
		{convertIn{1, "m", "KM"}, "unknown_unit", `did you mean "km"?`},
		{convertIn{-300, "C", "K"}, "invalid_value", "absolute zero"},
		{convertIn{1e308, "PiB", "bit"}, "math_error", "too large"},
	}
	for _, tt := range tests {
		_, err := convert(context.Background(), tt.in)
		var se *sdk.Error
		if !errors.As(err, &se) || se.Code != tt.code || !strings.Contains(se.Message, tt.msg) {
			t.Errorf("convert(%+v) = %v; want %s containing %q", tt.in, err, tt.code, tt.msg)
		}
	}
}

// TestUnitEnumMatchesTable keeps the schema's enums, unitOrder and the units
// table in step: the enum is what the model sees.
func TestUnitEnumMatchesTable(t *testing.T) {
	if len(unitOrder) != len(units) {
		t.Fatalf("unitOrder has %d units, table has %d", len(unitOrder), len(units))
	}
	for _, k := range unitOrder {
		if _, ok := units[k]; !ok {
			t.Errorf("unitOrder lists %q, which the table lacks", k)
		}
	}
	typ := reflect.TypeFor[convertIn]()
	for _, field := range []string{"From", "To"} {
		f, _ := typ.FieldByName(field)
		var enum []string
		for _, part := range strings.Split(f.Tag.Get("jsonschema"), ",") {
			if v, ok := strings.CutPrefix(part, "enum="); ok {
				enum = append(enum, v)
			}
		}
		if !reflect.DeepEqual(enum, unitOrder) {
			got, _ := json.Marshal(enum)
			t.Errorf("%s enum = %s, want unitOrder", field, got)
		}
	}
}
