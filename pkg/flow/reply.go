package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Reply makes an agent participant answer with a typed function call
// instead of free text: the reviewer's review with four booleans, say. The
// run offers Function with Parameters as its schema, requires the model to
// call it, and asks again (up to MaxAttempts model calls in all) when the
// model answers in text or its arguments fail the schema; after that the
// run stops with stop reason reply_failed. The call's arguments become
// the turn's structured result, which conditions read as `result`.
type Reply struct {
	Function    string          `json:"function"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	MaxAttempts int             `json:"max_attempts,omitempty"` // default 3

	schema *jsonschema.Schema
}

// Validate checks the arguments of a call to the reply function against its
// schema.
func (r *Reply) Validate(arguments json.RawMessage) error {
	var v any
	if err := json.Unmarshal(arguments, &v); err != nil {
		return fmt.Errorf("arguments of %s are not JSON: %w", r.Function, err)
	}
	if err := r.schema.Validate(v); err != nil {
		return fmt.Errorf("arguments of %s: %w", r.Function, err)
	}
	return nil
}

// reply validates p.Reply at path.
func (v *validator) reply(path string, p *Participant) {
	r := p.Reply
	if p.Kind() != KindAgent {
		v.bad(path, "only an agent participant (one with a profile) answers with a reply function")
	}
	if !registry.ValidName(r.Function) {
		v.bad(path+".function", "%q must be lowercase letters and digits joined by single - or _", r.Function)
	}
	v.intOr(path+".max_attempts", &r.MaxAttempts, DefaultMaxAttempts, 1, 10)
	if len(r.Parameters) == 0 {
		v.bad(path+".parameters", "give the JSON Schema of the function's arguments, an object schema")
		return
	}
	s, err := compileObjectSchema(r.Parameters)
	if err != nil {
		v.bad(path+".parameters", "%s", oneLine(err.Error()))
		return
	}
	r.schema = s
}

// compileObjectSchema compiles an object schema under draft 2020-12. It
// loads nothing: a $ref must point inside the schema.
func compileObjectSchema(raw json.RawMessage) (s *jsonschema.Schema, err error) {
	defer func() { // the compiler must not take the loader down on a strange schema
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("the schema could not be compiled: %v", p)
		}
	}()
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(raw, &top); err != nil || top.Type != "object" {
		return nil, errors.New(`must be a JSON Schema with "type": "object"`)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("references %q: a reply schema may not load anything", url)
	}
	if err := c.AddResource("skillhost:///reply.json", bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile("skillhost:///reply.json")
}
