package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/sdk/skilltest"
)

func TestSkillDescribe(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	d, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "calc" || d.Version != "1.0.0" || len(d.Tools) != 2 {
		t.Fatalf("describe = %v", d)
	}
	for _, tool := range d.Tools {
		if !tool.Annotations.ReadOnly || tool.Description == "" {
			t.Errorf("tool %s: read_only=%v description=%q", tool.Name, tool.Annotations.ReadOnly, tool.Description)
		}
	}
	if d.Tools[0].Name != "evaluate" || !strings.Contains(string(d.Tools[0].InputSchema), `"required":["expression"]`) {
		t.Errorf("evaluate schema = %s", d.Tools[0].InputSchema)
	}
	if d.Tools[1].Name != "convert_units" || !strings.Contains(string(d.Tools[1].InputSchema), `"GiB"`) {
		t.Errorf("convert_units schema = %s", d.Tools[1].InputSchema)
	}
}

func TestSkillInvoke(t *testing.T) {
	c := skilltest.Start(t, newSkill())
	ctx := context.Background()

	res, err := c.Call(ctx, "evaluate", map[string]any{"expression": "(2+3)*4"})
	if err != nil || string(res) != `{"result":20,"formatted":"20"}` {
		t.Fatalf("evaluate = %s, %v", res, err)
	}
	res, err = c.Call(ctx, "evaluate", map[string]any{"expression": "0.1 + 0.2"})
	var ev evaluateOut
	if err != nil || json.Unmarshal(res, &ev) != nil || ev.Formatted != "0.3" {
		t.Fatalf("evaluate 0.1+0.2 = %s, %v", res, err)
	}
	res, err = c.Call(ctx, "convert_units", map[string]any{"value": 100, "from": "C", "to": "F"})
	if err != nil || string(res) != `{"value":212,"formatted":"100 C = 212 F","kind":"temperature"}` {
		t.Fatalf("convert_units = %s, %v", res, err)
	}

	var te *skilltest.ToolError
	_, err = c.Call(ctx, "evaluate", map[string]any{"expression": "1/(3-3)"})
	if !errors.As(err, &te) || te.Code != "division_by_zero" || te.Retryable {
		t.Errorf("evaluate 1/(3-3) = %v", err)
	}
	_, err = c.Call(ctx, "evaluate", map[string]any{"expression": "2 +* 3"})
	if !errors.As(err, &te) || te.Code != "invalid_expression" || !strings.Contains(te.Message, "position 4") {
		t.Errorf("evaluate 2 +* 3 = %v", err)
	}
	_, err = c.Call(ctx, "evaluate", map[string]any{"expression": "1", "angle_unit": "grad"})
	if !errors.As(err, &te) || te.Code != "invalid_arguments" {
		t.Errorf("evaluate with angle_unit grad = %v", err)
	}
	_, err = c.Call(ctx, "convert_units", map[string]any{"value": 1, "from": "kg", "to": "km"})
	if !errors.As(err, &te) || te.Code != "incompatible_units" {
		t.Errorf("convert kg→km = %v", err)
	}
	_, err = c.Call(ctx, "convert_units", []byte(`{"value":"ten","from":"m","to":"km"}`))
	if !errors.As(err, &te) || te.Code != "invalid_arguments" {
		t.Errorf("convert with a string value = %v", err)
	}
}

// TestBinary builds the real skill, checks --manifest and serves it as a
// subprocess the way the host does (stdout carries only the handshake).
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the skill binary")
	}
	bin := skilltest.Build(t, ".")
	m := skilltest.Manifest(t, bin)
	if m.Name != "calc" || m.Version != "1.0.0" || m.Entrypoint != "calc" ||
		strings.Join(m.Tools, ",") != "convert_units,evaluate" || strings.Join(m.Tags, ",") != "math,calculator,arithmetic,计算" {
		t.Errorf("manifest = %+v", m)
	}
	c := skilltest.Exec(t, bin)
	res, err := c.Call(context.Background(), "evaluate", map[string]any{"expression": "sqrt(2)^2"})
	if err != nil || !strings.Contains(string(res), `"formatted":"2"`) {
		t.Fatalf("evaluate over a subprocess = %s, %v", res, err)
	}
}
