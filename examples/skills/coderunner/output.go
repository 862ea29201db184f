package main

import (
	"fmt"
	"strings"

	"github.com/dop251/goja"
)

// output collects what a script prints, up to max bytes shared with the
// JSON result. Past the cap the script is interrupted rather than left to
// print into nothing until its timeout.
type output struct {
	vm        *goja.Runtime
	stringify goja.Callable // the original JSON.stringify, taken before the script can replace it
	buf       strings.Builder
	max       int
	used      int
	truncated bool
}

func newOutput(vm *goja.Runtime, max int) (*output, error) {
	stringify, ok := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	if !ok {
		return nil, fmt.Errorf("JSON.stringify is not a function")
	}
	return &output{vm: vm, stringify: stringify, max: max}, nil
}

// log is console.log: its arguments joined by spaces, one line per call.
func (o *output) log(call goja.FunctionCall) goja.Value {
	var line strings.Builder
	for i, a := range call.Arguments {
		if i > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(o.display(a))
		if line.Len() > o.max {
			break
		}
	}
	line.WriteByte('\n')
	s := line.String()
	if !o.reserve(len(s)) {
		o.buf.WriteString(s[:min(len(s), o.max-o.buf.Len())])
		o.truncated = true
		o.vm.Interrupt(&runError{CodeOutputLimit, fmt.Sprintf("the script printed more than the output limit of %d bytes and was stopped", o.max)})
		return goja.Undefined()
	}
	o.buf.WriteString(s)
	return goja.Undefined()
}

// reserve takes n bytes of the output budget, or reports that they do not fit.
func (o *output) reserve(n int) bool {
	if o.used+n > o.max {
		return false
	}
	o.used += n
	return true
}

// json is JSON.stringify(v): "" when JSON has no text for v, an error when
// stringify throws (a cycle, a BigInt) or the script is interrupted.
func (o *output) json(v goja.Value) (string, error) {
	res, err := o.stringify(goja.Undefined(), v)
	if err != nil {
		return "", err
	}
	if res == nil || goja.IsUndefined(res) {
		return "", nil
	}
	return res.String(), nil
}

// display is how console.log shows one value, close to what Node prints
// for the common cases: strings bare, errors as "Name: message", functions
// as [Function: name], other objects as JSON.
func (o *output) display(v goja.Value) string {
	if sym, ok := v.(*goja.Symbol); ok {
		return "Symbol(" + sym.String() + ")" // sym.String() is only the description
	}
	obj, isObj := v.(*goja.Object)
	if !isObj {
		return v.String() // undefined, null, numbers, strings, booleans, symbols
	}
	if _, fn := goja.AssertFunction(v); fn {
		name := obj.Get("name")
		if name == nil || name.String() == "" {
			return "[Function (anonymous)]"
		}
		return "[Function: " + name.String() + "]"
	}
	if obj.ClassName() == "Error" {
		return v.String()
	}
	if s, err := o.json(v); err == nil && s != "" {
		return s
	}
	return v.String()
}
