package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/skillhost/skillhost/sdk"
)

// A handler that calls other hosted tools, tested without a host: the fake
// answers calc.evaluate and refuses everything else as the host would.
func ExampleCallAs() {
	type sum struct {
		Result float64 `json:"result"`
	}
	total := func(ctx context.Context, nights int) (float64, error) {
		out, err := sdk.CallAs[sum](ctx, "calc.evaluate", map[string]string{"expression": fmt.Sprintf("%d*600", nights)})
		return out.Result, err
	}
	ctx := sdk.WithCaller(context.Background(), func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		if tool != "calc.evaluate" {
			return nil, &sdk.CallError{Tool: tool, Code: "forbidden", Message: "not in uses"}
		}
		return json.RawMessage(`{"result":1800}`), nil
	})
	fmt.Println(total(ctx, 3))
	_, err := sdk.Call(ctx, "mail.send", nil)
	fmt.Println(sdk.IsCode(err, "forbidden"), err)
	// Output:
	// 1800 <nil>
	// true calling mail.send: forbidden: not in uses
}

func TestCallWithoutAHost(t *testing.T) {
	_, err := sdk.Call(context.Background(), "calc.evaluate", map[string]any{"expression": "1"})
	var ce *sdk.CallError
	if !errors.As(err, &ce) || ce.Code != sdk.CodeNoHost || ce.Tool != "calc.evaluate" {
		t.Fatalf("Call outside a handler = %v, want a %s CallError", err, sdk.CodeNoHost)
	}
	if sdk.CallID(context.Background()) != "" {
		t.Error("CallID outside a handler is not empty")
	}
}

func TestCallArguments(t *testing.T) {
	var got []string
	ctx := sdk.WithCaller(context.Background(), func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		got = append(got, string(args))
		return json.RawMessage(`"ok"`), nil
	})
	for _, args := range []any{nil, json.RawMessage(`{"a":1}`), []byte(`{"b":2}`), struct {
		C int `json:"c"`
	}{3}} {
		if _, err := sdk.Call(ctx, "x.y", args); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{`{}`, `{"a":1}`, `{"b":2}`, `{"c":3}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("arguments sent = %v, want %v", got, want)
	}
	if _, err := sdk.Call(ctx, "x.y", func() {}); !sdk.IsCode(err, "invalid_arguments") {
		t.Errorf("unencodable arguments: %v", err)
	}
	if _, err := sdk.CallAs[int](ctx, "x.y", nil); !sdk.IsCode(err, "invalid_response") {
		t.Errorf("a result that does not decode: %v", err)
	}
	if !sdk.IsCode(sdk.Errorf("not_found", "x"), "not_found") || sdk.IsCode(errors.New("x"), "tool_error") {
		t.Error("IsCode on *Error or a plain error")
	}
}
