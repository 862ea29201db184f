package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/api"
)

// runChat asks the daemon's agent loop one question over POST /v1/chat with
// streaming, printing tool calls (to stderr) as they happen and the answer
// (to stdout) as it streams, so that `host chat ... > answer.txt` keeps
// just the answer. Exit codes: 0 answered, 1 the run failed, 2 usage (or a
// request the daemon refused as bad), 3 the daemon could not be reached.
func runChat(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: host chat [--profile P] [--addr URL] [--token-file F] "question"   ("-" reads the question from stdin)`)
		fs.PrintDefaults()
	}
	mk := clientFlags(fs) // --addr, --token-file, --json, as for every command that talks to the daemon
	profile := fs.String("profile", "", "agent profile to run (default: the daemon's default profile)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	question := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if question == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintf(stderr, "host chat: reading the question from stdin: %v\n", err)
			return exitFailure
		}
		question = strings.TrimSpace(string(b))
	}
	if question == "" {
		fmt.Fprintln(stderr, `host chat: no question; usage: host chat [--profile P] "question" (flags go before the question)`)
		return exitUsage
	}
	c, err := mk()
	if err != nil {
		fmt.Fprintf(stderr, "host chat: %v\n", err)
		return exitUsage
	}
	defer c.http.CloseIdleConnections()
	body, _ := json.Marshal(agent.Request{Profile: *profile, Messages: []agent.Message{{Role: "user", Content: question}}, Stream: true})
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/chat", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "host chat: %v\n", err)
		return exitUsage
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "host chat: cannot reach the daemon at %s: %v\n", c.base, err)
		return exitUnreachable
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		printChatError(stderr, resp.StatusCode, b)
		if resp.StatusCode == http.StatusBadRequest {
			return exitUsage
		}
		return exitFailure
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		fmt.Fprintf(stderr, "host chat: the daemon answered %q, not an event stream; is %s a skillhost daemon?\n", ct, c.base)
		return exitFailure
	}
	p := &chatPrinter{stdout: stdout, stderr: stderr, json: c.json}
	return p.read(resp.Body)
}

func printChatError(w io.Writer, status int, body []byte) {
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil {
		fmt.Fprintf(w, "host chat: %s (%d): %s\n", eb.Error.Code, status, eb.Error.Message)
		return
	}
	fmt.Fprintf(w, "host chat: the daemon answered %d: %s\n", status, strings.TrimSpace(string(body)))
}

// chatPrinter turns the event stream into terminal output. With json the
// answer is not streamed; the final response is printed as JSON instead.
type chatPrinter struct {
	stdout, stderr io.Writer
	json           bool
	midLine        bool   // stdout holds a partial line of streamed text
	step           int    // step of the streamed text
	streamed       string // depth-0 text of that step
}

func (p *chatPrinter) read(r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var name string
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if name != "" {
				if code, done := p.event(name, []byte(data.String())); done {
					return code
				}
			}
			name = ""
			data.Reset()
		case strings.HasPrefix(line, ":"): // heartbeat
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	p.endLine()
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(p.stderr, "host chat: the stream broke: %v\n", err)
	} else {
		fmt.Fprintln(p.stderr, "host chat: the stream ended before the answer")
	}
	return exitFailure
}

// event prints one event; done reports the end of the stream.
func (p *chatPrinter) event(name string, data []byte) (code int, done bool) {
	switch agent.EventType(name) {
	case agent.EventDone:
		var resp agent.Response
		if err := json.Unmarshal(data, &resp); err != nil {
			p.endLine()
			fmt.Fprintf(p.stderr, "host chat: bad done event: %v\n", err)
			return exitFailure, true
		}
		if p.json {
			printRaw(p.stdout, data)
			return exitOK, true
		}
		p.finish(&resp)
		return exitOK, true
	case agent.EventError:
		p.endLine()
		printChatError(p.stderr, http.StatusOK, data)
		return exitFailure, true
	}
	var e agent.Event
	if err := json.Unmarshal(data, &e); err != nil {
		return 0, false // an event this version does not know
	}
	indent := strings.Repeat("  ", e.Depth)
	who := ""
	if e.Depth > 0 {
		who = "[" + e.Profile + "] "
	}
	switch e.Type {
	case agent.EventStart:
		p.endLine()
		fmt.Fprintf(p.stderr, "%s%s· %s on %s, tools: %s\n", indent, who, e.Profile, e.Model, strings.Join(e.Tools, ", "))
	case agent.EventDelta:
		if e.Depth > 0 || p.json {
			return 0, false // a sub-agent's text reaches us as its tool result
		}
		if e.Step != p.step {
			p.step, p.streamed = e.Step, ""
		}
		p.streamed += e.Delta
		io.WriteString(p.stdout, e.Delta)
		p.midLine = !strings.HasSuffix(e.Delta, "\n")
	case agent.EventToolCallStarted:
		p.endLine()
		name := e.Call.Name
		if e.Call.Tool != "" {
			name = e.Call.Tool
		}
		fmt.Fprintf(p.stderr, "%s%s→ %s %s\n", indent, who, name, e.Call.Arguments)
	case agent.EventToolCallFinished:
		p.endLine()
		name := e.Call.Name
		if e.Call.Tool != "" {
			name = e.Call.Tool
		}
		if e.Call.OK {
			ver := ""
			if e.Call.Skill != "" {
				ver = " " + e.Call.Skill + "@" + e.Call.Version
			}
			fmt.Fprintf(p.stderr, "%s%s← %s ok%s %.1f ms: %s\n", indent, who, name, ver, e.Call.DurationMS, oneLine(e.Call.Summary, 120))
		} else {
			fmt.Fprintf(p.stderr, "%s%s← %s error %s: %s\n", indent, who, name, e.Call.Error.Code, oneLine(e.Call.Error.Message, 200))
		}
	case agent.EventNotice:
		p.endLine()
		fmt.Fprintf(p.stderr, "%s%s! %s\n", indent, who, e.Message)
	}
	return 0, false
}

// finish prints the answer unless it already streamed, and a summary.
func (p *chatPrinter) finish(r *agent.Response) {
	if p.streamed != r.Answer {
		p.endLine()
		fmt.Fprint(p.stdout, r.Answer)
		p.midLine = !strings.HasSuffix(r.Answer, "\n")
	}
	p.endLine()
	var skills []string
	for s, v := range r.Skills {
		skills = append(skills, s+"@"+v)
	}
	sort.Strings(skills)
	summary := fmt.Sprintf("(%s: %d steps, %d tool calls", r.Profile, r.Steps, len(r.ToolCalls))
	if len(skills) > 0 {
		summary += ", skills " + strings.Join(skills, " ")
	}
	if r.Usage.TotalTokens > 0 {
		summary += fmt.Sprintf(", %d tokens", r.Usage.TotalTokens)
	}
	if r.FinishReason != "stop" {
		summary += ", finished: " + r.FinishReason
	}
	fmt.Fprintln(p.stderr, summary+")")
}

func (p *chatPrinter) endLine() {
	if p.midLine {
		io.WriteString(p.stdout, "\n")
		p.midLine = false
	}
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
