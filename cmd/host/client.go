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
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skillhost/skillhost/pkg/api"
)

// client talks to a running daemon for the CLI commands.
type client struct {
	base  string
	token string
	http  *http.Client
	json  bool
}

// clientFlags adds --addr, --token-file and --json to fs.
func clientFlags(fs *flag.FlagSet) func() (*client, error) {
	addr := fs.String("addr", envOr("SKILLHOST_ADDR", "http://127.0.0.1:7070"), "daemon address: http://host:port or unix:/path.sock (env SKILLHOST_ADDR)")
	tokenFile := fs.String("token-file", os.Getenv("SKILLHOST_TOKEN_FILE"), "file with the bearer token (env SKILLHOST_TOKEN_FILE, or SKILLHOST_TOKEN for the token itself)")
	asJSON := fs.Bool("json", false, "print the daemon's JSON instead of a table")
	return func() (*client, error) {
		c := &client{json: *asJSON}
		c.base, c.http = daemonHTTP(*addr)
		c.base = strings.TrimRight(c.base, "/")
		c.token = os.Getenv("SKILLHOST_TOKEN")
		if *tokenFile != "" {
			t, err := api.ReadToken(*tokenFile)
			if err != nil {
				return nil, err
			}
			c.token = t
		}
		return c, nil
	}
}

// daemonHTTP turns a daemon address (http://host:port, host:port, or
// unix:/path.sock) into the base URL of its API and the HTTP client that
// reaches it: one that dials the socket for a unix: address.
func daemonHTTP(addr string) (base string, hc *http.Client) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		if !strings.Contains(addr, "://") {
			addr = "http://" + addr
		}
		return addr, &http.Client{}
	}
	return "http://unix", &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// apiError is an error answer from the daemon. Body is the answer as sent,
// which --json prints.
type apiError struct {
	Status  int
	Code    string
	Message string
	Body    []byte
}

func (e *apiError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// errUnreachable marks a daemon that did not answer at all.
var errUnreachable = errors.New("daemon unreachable")

// usageError is a mistake in the command line itself (exit 2); what the
// daemon refuses exits 1.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// do sends a request and decodes a JSON answer into out (if not nil). The
// raw body is returned too, for --json.
func (c *client) do(method, path string, body any, out any) ([]byte, error) {
	resp, err := c.send(method, path, body, "")
	if ae := (*apiError)(nil); errors.As(err, &ae) {
		return ae.Body, err
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return raw, fmt.Errorf("decode answer: %w", err)
		}
	}
	return raw, nil
}

// send makes one request with the client's token and returns the response
// of a successful one. An error answer comes back as *apiError, in the API's
// error shape when the daemon used it, so every command words a refusal
// (a wrong token, an unknown tool) the same way.
func (c *client) send(method, path string, body any, accept string) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", errUnreachable, c.base, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var eb api.ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		return nil, &apiError{Status: resp.StatusCode, Code: string(eb.Error.Code), Message: eb.Error.Message, Body: raw}
	}
	return nil, &apiError{Status: resp.StatusCode, Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(raw)), Body: raw}
}

// stream reads server-sent events from path and calls fn for each until fn
// returns false or the stream ends.
func (c *client) stream(method, path string, body any, fn func(event string, data []byte) bool) error {
	resp, err := c.send(method, path, body, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	// An event is its lines up to a blank one; several data lines join with
	// newlines, as the server-sent events format says.
	event, data, hasData := "message", []byte(nil), false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if hasData && !fn(event, data) {
				return nil
			}
			event, data, hasData = "message", nil, false
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, strings.TrimPrefix(line[5:], " ")...), true
		}
	}
	return sc.Err()
}

// exitCode maps a client error to the CLI's exit codes.
func exitCode(stderr io.Writer, cmd string, err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "host %s: %v\n", cmd, err)
	var ue usageError
	switch {
	case errors.Is(err, errUnreachable):
		return exitUnreachable
	case errors.As(err, &ue):
		return exitUsage
	default:
		return exitFailure
	}
}

func ago(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return time.Since(*t).Round(time.Second).String()
}
