package tools

import (
	"context"
	"encoding/json"
	"strings"
)

// EchoArgs is echo's input and output: a small JSON object.
type EchoArgs struct {
	Msg  string   `json:"msg"`
	N    int      `json:"n"`
	Tags []string `json:"tags,omitempty"`
}

// Echo returns its arguments.
func Echo(_ context.Context, in EchoArgs) (EchoArgs, error) { return in, nil }

// BlobArgs is blob's (empty) input.
type BlobArgs struct{}

// BlobResult is blob's output: one string of BlobBytes characters.
type BlobResult struct {
	Data string `json:"data"`
}

// BlobBytes is the size of blob's payload.
const BlobBytes = 64 << 10

var blob = func() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	return strings.Repeat(alphabet, BlobBytes/len(alphabet))
}()

// Blob returns a 64 KiB result.
func Blob(_ context.Context, _ BlobArgs) (BlobResult, error) { return BlobResult{Data: blob}, nil }

// Descriptions of the two tools, shared by every server.
const (
	EchoDescription = "Echo a small JSON object back unchanged."
	BlobDescription = "Return a 64 KiB string, to measure large results."
)

// Arguments every caller sends, as JSON.
var (
	EchoJSON = []byte(`{"msg":"hello, skillhost","n":42,"tags":["bench","echo"]}`)
	BlobJSON = []byte(`{}`)
)

// Names of the tools.
const (
	EchoTool = "echo"
	BlobTool = "blob"
)

// Call is the in-process baseline: the handler called the way a skill's
// wrapper calls it, from JSON arguments to a JSON result (decode, handler,
// encode), with no transport in between.
func Call(ctx context.Context, tool string, args []byte) ([]byte, error) {
	switch tool {
	case EchoTool:
		var in EchoArgs
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		out, err := Echo(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	case BlobTool:
		var in BlobArgs
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		out, err := Blob(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	return nil, &UnknownToolError{Tool: tool}
}

// UnknownToolError is returned by Call for a name that is neither tool.
type UnknownToolError struct{ Tool string }

func (e *UnknownToolError) Error() string { return "unknown benchmark tool " + e.Tool }
