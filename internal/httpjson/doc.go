// Package httpjson is the JSON plumbing every HTTP face of skillhost shares
// (the API, the agent loop): strict request decoding and answers in the one
// error shape, so that each face refuses bad bodies with the same words.
package httpjson
