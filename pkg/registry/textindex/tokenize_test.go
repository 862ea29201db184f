package textindex

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"english", "Converts the units of a measurement", []string{"convert", "unit", "measur"}},
		{"camelCase", "getUserID", []string{"get", "user", "id"}},
		{"acronym", "parseHTTPResponse", []string{"pars", "http", "respons"}},
		{"snake_case", "convert_units", []string{"convert", "unit"}},
		{"dots", "AclApi.add_mapping", []string{"acl", "api", "add", "map"}},
		{"digits", "Flights_4_SearchFlights", []string{"flight", "search", "flight"}},
		{"compound kept whole", "upload to S3 as mp3", []string{"upload", "s3", "mp", "mp3"}},
		{"stopwords and single letters", "What is a b of the", nil},
		{"chinese", "报销制度", []string{"报", "销", "制", "度", "报销", "销制", "制度"}},
		{"single han", "查", []string{"查"}},
		{"mixed", "用API查天气 weather", []string{"用", "api", "查", "天", "气", "查天", "天气", "weather"}},
		{"japanese", "天気を調べる", []string{"天", "気", "を", "調", "べ", "る", "天気", "気を", "を調", "調べ", "べる"}},
		{"korean", "날씨", []string{"날", "씨", "날씨"}},
		{"punctuation", "  --hello,, world!! ", []string{"hello", "world"}},
		{"non-ascii latin", "Größe ändern", []string{"größe", "ändern"}},
		{"empty", "", nil},
		{"bare expression", "what is 17*23+4?", []string{"time", "plu"}},
		{"expression with spaces and parentheses", "(2 + 3) / 4 ^ 2 % 7 - 1", []string{"plu", "divid", "power", "modulo", "minu"}},
		{"unicode operators", "12 × 3 ÷ 4 − 1", []string{"time", "divid", "minu"}},
		{"dates and ranges are not subtraction", "on 2023-04-27, 05/12/2023 or 2019-2020", nil},
		{"signs, units and hyphens are not operators", "b=-3 at 4 m/s^2 by e-mail, 7% cheaper", []string{"mail", "cheaper"}},
		{"polynomial", "3x^2 + 2x", []string{"3x", "plu", "2x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokenize(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"getUserID", "查询报销制度", "mp3_v2.HTTPServer", "\xff\xfe", "ÀÉÎ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range Tokenize(s) {
			if tok == "" {
				t.Fatalf("empty token from %q", s)
			}
		}
	})
}
