package sdk

import (
	"encoding/json"
	"reflect"
	"testing"
)

type Page struct {
	Cursor *string `json:"cursor"`
}

type hit struct {
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
}

type nullableOut struct {
	Page                                 // promoted: cursor
	Hits     []*hit                      `json:"hits"`
	Counts   map[string]int              `json:"counts"`
	Optional []string                    `json:"optional,omitempty"`
	Name     string                      `json:"name"`
	Groups   map[string][]string         `json:"groups"`
	Skip     []string                    `json:"-"`
	Nested   struct{ Inner []int }       `json:"nested"`
	Any      any                         `json:"any"`
	ByKey    map[string]*struct{ X int } `json:"by_key"`
}

// TestOutputSchemaAllowsWhatJSONWritesAsNull checks that every place where
// encoding/json may write null (a nil slice, map or pointer without
// omitempty, at any depth) has "null" among its types, and nothing else
// does.
func TestOutputSchemaAllowsWhatJSONWritesAsNull(t *testing.T) {
	raw, err := outputSchemaFor[nullableOut]()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	sub := func(m map[string]any, keys ...string) map[string]any {
		for _, k := range keys {
			m = m[k].(map[string]any)
		}
		return m
	}
	nullable := []any{"array", "null"}
	for _, c := range []struct {
		got, want any
		what      string
	}{
		{sub(props, "cursor")["type"], []any{"string", "null"}, "promoted *string"},
		{sub(props, "hits")["type"], nullable, "[]*hit"},
		{sub(props, "hits", "items")["type"], []any{"object", "null"}, "*hit element"},
		{sub(props, "hits", "items", "properties", "tags")["type"], nullable, "hit.tags"},
		{sub(props, "counts")["type"], []any{"object", "null"}, "map"},
		{sub(props, "optional")["type"], "array", "omitempty slice"},
		{sub(props, "name")["type"], "string", "string"},
		{sub(props, "groups", "additionalProperties")["type"], nullable, "map value []string"},
		{sub(props, "nested", "properties", "Inner")["type"], nullable, "untagged nested field"},
		{sub(props, "by_key", "additionalProperties")["type"], []any{"object", "null"}, "map value pointer"},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: type %v, want %v", c.what, c.got, c.want)
		}
	}
	if _, ok := props["Skip"]; ok {
		t.Error(`a json:"-" field is in the schema`)
	}

	// A list result may itself be null; a struct result keeps the
	// reflector's schema byte for byte when nothing in it can be null.
	list, _ := outputSchemaFor[[]string]()
	if string(list) != `{"items":{"type":"string"},"type":["array","null"]}` {
		t.Errorf("[]string result: %s", list)
	}
	type plain struct {
		A string `json:"a"`
	}
	got, _ := outputSchemaFor[plain]()
	want, _ := schemaFor[plain]()
	if string(got) != string(want) {
		t.Errorf("plain struct: %s, want the reflector's %s", got, want)
	}
}
