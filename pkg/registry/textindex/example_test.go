package textindex_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/registry/textindex"
)

func Example() {
	ix := textindex.New([]textindex.Doc{
		{Key: "calc.convert_units", Skill: "calc", Name: "convert_units",
			Description: "Convert a quantity between units of measurement.",
			Params:      []textindex.Param{{Name: "from_unit"}, {Name: "to_unit"}}},
		{Key: "weather.getForecast", Skill: "weather", Name: "getForecast",
			Description: "Weather forecast for a city.", Tags: []string{"weather", "天气"}},
		{Key: "hr.policy", Skill: "hr", Name: "lookup_policy",
			Description: "差旅报销制度说明", Tags: []string{"制度"}},
	})
	for _, q := range []string{"convert 3 miles to km", "天气预报", "查询报销制度"} {
		hits := ix.Search(textindex.Query{Text: q, Limit: 1})
		fmt.Printf("%s → %s\n", q, hits[0].Key)
	}

	// Replace returns a new index; the old one is unchanged.
	nx := ix.Replace("weather", nil)
	fmt.Println(ix.Len(), nx.Len())
	// Output:
	// convert 3 miles to km → calc.convert_units
	// 天气预报 → weather.getForecast
	// 查询报销制度 → hr.policy
	// 3 2
}

func ExampleTokenize() {
	fmt.Println(textindex.Tokenize("getUserID by snake_case"))
	fmt.Println(textindex.Tokenize("查询报销"))
	fmt.Println(textindex.Tokenize("what is 17*23+4? (not 2023-04-27)"))
	// Output:
	// [get user id snake case]
	// [查 询 报 销 查询 询报 报销]
	// [time plu]
}

func ExampleParamsFromSchema() {
	schema := `{"type":"object","properties":{
		"unit":{"type":"string","description":"Temperature unit","enum":["celsius","fahrenheit"]},
		"city":{"type":"string","description":"City name"}}}`
	for _, p := range textindex.ParamsFromSchema([]byte(schema)) {
		fmt.Printf("%s: %s\n", p.Name, p.Description)
	}
	// Output:
	// city: City name
	// unit: Temperature unit celsius fahrenheit
}
