package flow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

// State is what conditions, argument mappings and termination see of a run
// after a turn. The run engine fills it; the zero value is the state before
// anyone has spoken.
type State struct {
	// Round counts the turns taken so far; 0 before the first speaker.
	Round int
	// Sender is who spoke last, "" before anyone has.
	Sender string
	// Text is the last message's text.
	Text string
	// Result is the structured part of the last message: a tool agent's
	// tool result, or the arguments of the function call a participant
	// answered with (such as a reviewer's typed review); nil when none.
	// Values are as encoding/json decodes them.
	Result map[string]any
	// LastBy holds each participant's latest message text, by name: a
	// tool agent that runs the coder's code after the reviewer spoke reads
	// last_by.coder.
	LastBy map[string]string

	// The rest are read by termination conditions only.
	Tokens          int           // tokens the run has used
	Elapsed         time.Duration // wall-clock time since the run started
	TerminateCalled bool          // a participant called the terminate tool
	Next            string        // the speaker chosen for the next turn, when known
}

// The CEL variables, typed: conditions are checked against these types at
// load, so `round == "3"` or `text > 1` fails there, not in a run.
const (
	varText   = "text"    // string: the last message's text
	varSender = "sender"  // string: who spoke last
	varResult = "result"  // map(string, dyn): State.Result, {} when nil
	varRound  = "round"   // int: State.Round
	varLastBy = "last_by" // map(string, string): State.LastBy, {} when nil
)

// celEnv is built once; a cel.Env is safe for concurrent use.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varText, cel.StringType),
		cel.Variable(varSender, cel.StringType),
		cel.Variable(varResult, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varRound, cel.IntType),
		cel.Variable(varLastBy, cel.MapType(cel.StringType, cel.StringType)),
		cel.OptionalTypes(), // result.?ok.orValue(false) for a key that may be missing
		ext.Strings(),       // lowerAscii, trim, split, …
	)
})

// compile type-checks expr and builds its program with the cost limit.
// wantBool asks for a condition: its type must be bool (or dyn, which is
// then checked at each evaluation).
func compile(expr string, wantBool bool) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("build the CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, errors.New(iss.Err().Error())
	}
	if t := ast.OutputType(); wantBool && !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fmt.Errorf("is of type %s; a condition must be bool", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return nil, fmt.Errorf("build the program: %w", err)
	}
	return prg, nil
}

// activation returns the CEL variables of s.
func (s State) activation() map[string]any {
	result := s.Result
	if result == nil {
		result = map[string]any{}
	}
	lastBy := s.LastBy
	if lastBy == nil {
		lastBy = map[string]string{}
	}
	return map[string]any{varText: s.Text, varSender: s.Sender, varResult: result, varRound: int64(s.Round), varLastBy: lastBy}
}

// interruptEvery is how many comprehension steps pass between checks of
// the evaluation's deadline.
const interruptEvery = 64

// eval runs prg within EvalTimeout. The cost limit alone does not bound
// time: a comprehension over a list that split() built from a long message
// takes time quadratic in its length at a cost that grows only linearly
// (20 000 words: about a second), so the deadline is the second bound.
func eval(prg cel.Program, vars map[string]any) (ref.Val, error) {
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	v, _, err := prg.ContextEval(ctx, vars)
	return v, err
}

// evalBool evaluates a condition.
func evalBool(prg cel.Program, vars map[string]any) (bool, error) {
	v, err := eval(prg, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("evaluated to %v of type %s, not a bool", v.Value(), v.Type())
	}
	return b, nil
}

// evalJSON evaluates an argument mapping into a JSON-ready value.
func evalJSON(prg cel.Program, vars map[string]any) (any, error) {
	v, err := eval(prg, vars)
	if err != nil {
		return nil, err
	}
	pv, err := v.ConvertToNative(structpbValue)
	if err != nil {
		return nil, fmt.Errorf("the value has no JSON form: %w", err)
	}
	return pv.(*structpb.Value).AsInterface(), nil
}

var structpbValue = reflect.TypeFor[*structpb.Value]()
