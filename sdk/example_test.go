package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

type greetIn struct {
	Name     string `json:"name" jsonschema:"minLength=1" jsonschema_description:"Who to greet, e.g. Ada."`
	Language string `json:"language,omitempty" jsonschema:"enum=en,enum=fr,default=en" jsonschema_description:"en (default) or fr."`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greet(ctx context.Context, in greetIn) (greetOut, error) {
	if in.Language == "fr" {
		return greetOut{Greeting: "Bonjour, " + in.Name + "!"}, nil
	}
	return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
}

// describe returns what the host receives from Describe: every tool with its schemas.
func describe(s *sdk.Skill) *skillpb.DescribeResponse {
	d, err := s.Server(nil).Describe(context.Background(), &skillpb.DescribeRequest{})
	if err != nil {
		panic(err)
	}
	return d
}

func printJSON(raw []byte) {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		panic(err)
	}
	fmt.Println(b.String())
}

// Tool infers the input and output schemas from the handler's Go types. A field without
// omitempty is required; struct schemas close additionalProperties, so the host rejects
// fields the type does not have before the handler runs.
func ExampleTool() {
	s := sdk.New("hello", "1.0.0", "Greets people.")
	sdk.Tool(s, "greet", "Greet someone by name.", greet, sdk.ReadOnly(), sdk.WithTags("greeting"))

	t := describe(s).Tools[0]
	fmt.Println(t.Name, t.Tags, "read_only:", t.Annotations.ReadOnly, "idempotent:", t.Annotations.Idempotent)
	printJSON(t.InputSchema)
	printJSON(t.OutputSchema)
	// Output:
	// greet [greeting] read_only: true idempotent: true
	// {
	//   "properties": {
	//     "name": {
	//       "type": "string",
	//       "minLength": 1,
	//       "description": "Who to greet, e.g. Ada."
	//     },
	//     "language": {
	//       "type": "string",
	//       "enum": [
	//         "en",
	//         "fr"
	//       ],
	//       "description": "en (default) or fr.",
	//       "default": "en"
	//     }
	//   },
	//   "additionalProperties": false,
	//   "type": "object",
	//   "required": [
	//     "name"
	//   ]
	// }
	// {
	//   "properties": {
	//     "greeting": {
	//       "type": "string"
	//     }
	//   },
	//   "additionalProperties": false,
	//   "type": "object",
	//   "required": [
	//     "greeting"
	//   ]
	// }
}

// The `jsonschema` struct tag is split at commas, so a description written there is cut at
// its first comma. Put descriptions in `jsonschema_description`, which is taken whole.
func ExampleTool_descriptions() {
	type in struct {
		Cut   string `json:"cut" jsonschema:"description=City, or city and country"`
		Whole string `json:"whole" jsonschema_description:"City, or city and country"`
	}
	s := sdk.New("geo", "1.0.0", "Geography.")
	sdk.Tool(s, "where", "Locate a place.", func(ctx context.Context, in in) (string, error) { return in.Whole, nil })

	var schema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(describe(s).Tools[0].InputSchema, &schema); err != nil {
		panic(err)
	}
	fmt.Printf("cut:   %q\n", schema.Properties["cut"].Description)
	fmt.Printf("whole: %q\n", schema.Properties["whole"].Description)
	// Output:
	// cut:   "City"
	// whole: "City, or city and country"
}

// A handler refuses with Errorf (or Retryable). The host turns the refusal into a tool_error
// whose details carry the code; the message is for people and models alike.
func ExampleErrorf() {
	s := sdk.New("hello", "1.0.0", "Greets people.")
	sdk.Tool(s, "greet", "Greet someone by name.", func(ctx context.Context, in greetIn) (greetOut, error) {
		if in.Name == "nobody" {
			return greetOut{}, sdk.Errorf("no_such_person", "%q is nobody; give a real name", in.Name)
		}
		return greet(ctx, in)
	})
	sdk.Tool(s, "busy", "Always busy.", func(ctx context.Context, in struct{}) (string, error) {
		return "", sdk.Retryable("backend_busy", "the backend is busy; retry in a second")
	})

	srv := s.Server(nil) // what the host talks to over gRPC
	for _, call := range []struct{ tool, args string }{
		{"greet", `{"name": "Ada", "language": "fr"}`},
		{"greet", `{"name": "nobody"}`},
		{"busy", `{}`},
	} {
		resp, err := srv.Invoke(context.Background(), &skillpb.InvokeRequest{Tool: call.tool, Arguments: []byte(call.args)})
		switch {
		case err != nil:
			fmt.Println("transport error:", err)
		case resp.Error != nil:
			fmt.Printf("refused: code=%s retryable=%v message=%s\n", resp.Error.Code, resp.Error.Retryable, resp.Error.Message)
		default:
			fmt.Printf("result: %s\n", resp.Result)
		}
	}
	// Output:
	// result: {"greeting":"Bonjour, Ada!"}
	// refused: code=no_such_person retryable=false message="nobody" is nobody; give a real name
	// refused: code=backend_busy retryable=true message=the backend is busy; retry in a second
}

// A panic in a handler is recovered and answered as a refusal with code "panic"; the skill
// keeps serving. Plain errors (not *sdk.Error) get the code "tool_error".
func ExampleTool_panicsAndPlainErrors() {
	s := sdk.New("fragile", "1.0.0", "Breaks on purpose.")
	sdk.Tool(s, "boom", "Panics.", func(ctx context.Context, in struct{}) (string, error) {
		var m map[string]int
		//lint:ignore SA5000 the handler panics on purpose, as a nil-map bug does
		m["x"] = 1 // assignment to entry in nil map
		return "", nil
	})
	sdk.Tool(s, "plain", "Returns a plain error.", func(ctx context.Context, in struct{}) (string, error) {
		return "", fmt.Errorf("disk full")
	})
	srv := s.Server(nil)
	for _, tool := range []string{"boom", "plain"} {
		resp, _ := srv.Invoke(context.Background(), &skillpb.InvokeRequest{Tool: tool, Arguments: []byte(`{}`)})
		fmt.Printf("%s: code=%s message=%s\n", tool, resp.Error.Code, resp.Error.Message)
	}
	// Output:
	// boom: code=panic message=tool boom panicked: assignment to entry in nil map
	// plain: code=tool_error message=disk full
}

// Manifest is what the binary prints with --manifest. scripts/install-skill.sh and
// scripts/build-skills.sh add the entrypoint's sha256 and write it as manifest.json.
func ExampleSkill_Manifest() {
	s := sdk.New("hello", "1.0.0", "Greets people.")
	s.Tags = []string{"greeting", "demo"}
	s.Author = "you@example.com"
	s.Env = map[string]string{"HELLO_DEFAULT_LANGUAGE": "en"}
	sdk.Tool(s, "greet", "Greet someone by name.", greet, sdk.ReadOnly())
	sdk.Tool(s, "farewell", "Say goodbye.", func(ctx context.Context, in greetIn) (string, error) {
		return "Goodbye, " + in.Name + "!", nil
	})

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.Manifest("hello")); err != nil {
		panic(err)
	}
	// Output:
	// {
	//   "manifest_version": 1,
	//   "name": "hello",
	//   "version": "1.0.0",
	//   "description": "Greets people.",
	//   "entrypoint": "hello",
	//   "tags": [
	//     "greeting",
	//     "demo"
	//   ],
	//   "tools": [
	//     "farewell",
	//     "greet"
	//   ],
	//   "author": "you@example.com",
	//   "env": {
	//     "HELLO_DEFAULT_LANGUAGE": "en"
	//   }
	// }
}

// WithAnnotations sets every behaviour hint at once; ReadOnly is the common shorthand for
// read-only and idempotent.
func ExampleWithAnnotations() {
	s := sdk.New("files", "1.0.0", "File operations.")
	sdk.Tool(s, "delete", "Delete a file.", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "deleted " + in.Path, nil
	}, sdk.WithAnnotations(sdk.Annotations{Destructive: true, Idempotent: true}))

	a := describe(s).Tools[0].Annotations
	fmt.Printf("read_only=%v destructive=%v idempotent=%v open_world=%v\n", a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld)
	// Output:
	// read_only=false destructive=true idempotent=true open_world=false
}
