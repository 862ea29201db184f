package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// The event stream parser follows the server-sent events format: an event
// ends at a blank line, data lines join with newlines, comments and unknown
// fields are skipped, and an event with no data is not an event.
func TestStreamParsesServerSentEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": a comment\n\n")
		fmt.Fprint(w, "event: state\ndata: {\"tools\":3}\n\n")
		fmt.Fprint(w, "data: line one\ndata:line two\nid: 7\n\n")
		fmt.Fprint(w, "event: empty\n\n")
		fmt.Fprint(w, "event: skill\ndata: {}\n\n")
		fmt.Fprint(w, "event: never\ndata: {}\n\n")
	}))
	defer srv.Close()
	c := &client{base: srv.URL, token: "tok", http: srv.Client()}
	var got []string
	err := c.stream("GET", "/v1/events", nil, func(event string, data []byte) bool {
		got = append(got, event+"="+string(data))
		return event != "skill"
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`state={"tools":3}`, "message=line one\nline two", "skill={}"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A refusal reaches every command as the API's code and message, with the
// body kept for --json; a body not in the API's shape keeps its text.
func TestSendWordsRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			http.Error(w, "upstream went away", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"tool_not_found","message":"no tool x.y"}}`)
	}))
	defer srv.Close()
	c := &client{base: srv.URL, http: srv.Client()}
	raw, err := c.do("GET", "/v1/tools/x.y", nil, nil)
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "tool_not_found" || ae.Message != "no tool x.y" || string(raw) != string(ae.Body) || len(raw) == 0 {
		t.Fatalf("do: raw %q, err %#v", raw, err)
	}
	err = c.stream("GET", "/plain", nil, func(string, []byte) bool { return true })
	if !errors.As(err, &ae) || ae.Code != "Bad Gateway" || ae.Message != "upstream went away" {
		t.Fatalf("stream: %#v", err)
	}
	if _, err := (&client{base: "http://127.0.0.1:1", http: &http.Client{}}).do("GET", "/", nil, nil); !errors.Is(err, errUnreachable) {
		t.Fatalf("closed port: %v", err)
	}
}
