package mcprt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// codeTooLarge is the JSON-RPC error code of the answer conn makes up for a
// response it refused to buffer (-32000 to -32099 is the range JSON-RPC
// leaves to implementations).
const codeTooLarge = -32090

// stdioTransport is the go-sdk Transport over a server's stdin and stdout.
// The go-sdk's own stdio transports end the session at the first line they
// cannot decode and buffer a frame up to their cap before failing it; this
// one keeps the session alive through both, because one bad line from a
// third-party server should cost one call, not every call in flight:
//
//   - a line that is not JSON-RPC (a stray console.log) is reported to
//     onJunk and skipped;
//   - a line longer than max is never held in memory: it is streamed
//     through a small scanner that finds its top-level "id", and the call
//     waiting for it gets a codeTooLarge error in its place;
//   - a server that stops reading stdin cannot hold a caller past its
//     deadline: one goroutine writes, callers wait for it or their context.
type stdioTransport struct {
	stdin  io.WriteCloser
	stdout io.Reader
	max    int
	// onJunk and onTooLarge are called from the reading goroutine.
	onJunk     func(line []byte, err error)
	onTooLarge func(n int64, isResponse bool)

	conn *conn // the one connection Connect made

	// listMu guards lists and taskOnly.
	listMu sync.Mutex
	// lists are the ids of tools/list requests in flight: their answers
	// are read for what the go-sdk's Tool drops (see taskOnlyTools).
	lists map[jsonrpc.ID]bool
	// taskOnly names the tools the last tools/list marked
	// execution.taskSupport "required".
	taskOnly map[string]bool
}

// taskOnlyTools returns the tools the server's tools/list answers marked
// "execution": {"taskSupport": "required"}: they can only be called as MCP
// tasks, which this host does not speak, and the go-sdk's Tool type has no
// field for it.
func (t *stdioTransport) taskOnlyTools() map[string]bool {
	t.listMu.Lock()
	defer t.listMu.Unlock()
	return maps.Clone(t.taskOnly)
}

// sent notes a tools/list request, so that its answer is inspected.
func (t *stdioTransport) sent(msg jsonrpc.Message) {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.ID.IsValid() {
		t.listMu.Lock()
		if t.lists == nil {
			t.lists = map[jsonrpc.ID]bool{}
		}
		t.lists[r.ID] = true
		t.listMu.Unlock()
	}
}

// received inspects the answer to a noted tools/list request.
func (t *stdioTransport) received(msg jsonrpc.Message) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	t.listMu.Lock()
	defer t.listMu.Unlock()
	if !t.lists[r.ID] {
		return
	}
	delete(t.lists, r.ID)
	var res struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		return
	}
	if t.taskOnly == nil {
		t.taskOnly = map[string]bool{}
	}
	for _, tool := range res.Tools {
		if tool.Execution.TaskSupport == "required" {
			t.taskOnly[tool.Name] = true
		} else {
			delete(t.taskOnly, tool.Name)
		}
	}
}

func (t *stdioTransport) Connect(context.Context) (mcpsdk.Connection, error) {
	c := &conn{
		t: t, incoming: make(chan readResult), writes: make(chan frame),
		closed: make(chan struct{}), done: make(chan struct{}), writerDone: make(chan struct{}),
	}
	t.conn = c
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type conn struct {
	t          *stdioTransport
	incoming   chan readResult
	writes     chan frame    // to writeLoop, the one writer of stdin
	closed     chan struct{} // closed by Close
	done       chan struct{} // closed when readLoop returns
	writerDone chan struct{} // closed when writeLoop returns
	once       sync.Once
}

// frame is one encoded message for writeLoop, and where its result goes.
type frame struct {
	data []byte
	done chan error // capacity 1
}

func (c *conn) SessionID() string { return "" }

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the server: %w", err)
	}
	data = append(data, '\n')
	c.t.sent(msg)
	// A server that stops reading its stdin fills the pipe, and a write
	// then blocks: the caller must still get its deadline. The frame is
	// handed to writeLoop, which writes it whole or not at all, and the
	// caller waits for that or for its context, whichever comes first.
	f := frame{data: data, done: make(chan error, 1)}
	select {
	case c.writes <- f:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return io.ErrClosedPipe
	}
	select {
	case err := <-f.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop writes frames to stdin one at a time. It ends at Close, whose
// closing of stdin also ends a write that blocks.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case f := <-c.writes:
			_, err := c.t.stdin.Write(f.data)
			f.done <- err
		case <-c.closed:
			return
		}
	}
}

// Close closes the server's stdin, which is how MCP's stdio transport asks
// a server to exit. The reader ends when stdout does (the process exits or
// is killed; exec.Cmd.Wait closes the pipe).
func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.t.stdin.Close()
	})
	return err
}

func (c *conn) send(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

func (c *conn) readLoop() {
	defer close(c.done)
	br := bufio.NewReaderSize(c.t.stdout, 64<<10)
	for {
		line, tooLarge, err := readFrame(br, c.t.max)
		if err != nil {
			c.send(readResult{err: err})
			return
		}
		var msgs []jsonrpc.Message
		switch {
		case tooLarge != nil:
			if c.t.onTooLarge != nil {
				c.t.onTooLarge(tooLarge.n, tooLarge.response())
			}
			if m := tooLarge.answer(c.t.max); m != nil {
				msgs = append(msgs, m)
			}
		default:
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			var derr error
			if msgs, derr = decodeFrame(line); derr != nil {
				if c.t.onJunk != nil {
					c.t.onJunk(line, derr)
				}
				continue
			}
		}
		for _, m := range msgs {
			c.t.received(m)
			if !c.send(readResult{msg: m}) {
				return
			}
		}
	}
}

// decodeFrame decodes one line: a message, or a batch of them.
func decodeFrame(line []byte) ([]jsonrpc.Message, error) {
	if line[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, err
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, r := range raws {
			m, err := jsonrpc.DecodeMessage(r)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, err
	}
	return []jsonrpc.Message{m}, nil
}

// readFrame reads one newline-terminated line of at most max bytes. A
// longer line is consumed to its end through a frameScanner and returned as
// that scanner instead.
func readFrame(br *bufio.Reader, max int) ([]byte, *frameScanner, error) {
	var line []byte
	var sc *frameScanner
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case sc != nil:
			sc.feed(chunk)
		case len(line)+len(chunk) > max:
			sc = &frameScanner{}
			sc.feed(line)
			sc.feed(chunk)
			line = nil
		default:
			line = append(line, chunk...)
		}
		switch {
		case err == nil:
			return line, sc, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(line) > 0 || sc != nil):
			return line, sc, nil // a last line without its newline
		default:
			return nil, nil, err
		}
	}
}

// frameScanner follows the JSON of a frame too large to keep, byte by byte,
// holding only what it needs: whether the top-level object has a "method"
// (a request or notification from the server, which is dropped) and the
// raw value of its top-level "id" (a response, which is answered with an
// error so that the waiting call does not wait forever).
type frameScanner struct {
	n                 int64
	depth             int
	inStr, esc        bool
	expectKey         bool   // at depth 1, the next string is a key
	capKey, capID     bool   // capturing the current key / the id's value
	key, id           []byte // bounded captures
	cur               string // the key whose value is being read at depth 1
	hasMethod, idLost bool
}

const maxIDBytes = 256

func (s *frameScanner) feed(p []byte) {
	s.n += int64(len(p))
	for _, c := range p {
		if s.inStr {
			if s.capID {
				s.captureID(c)
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.capKey {
					s.capKey, s.cur, s.key = false, string(s.key), s.key[:0]
					if s.cur == "method" {
						s.hasMethod = true
					}
				}
				continue
			}
			if s.capKey && len(s.key) < 16 {
				s.key = append(s.key, c)
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.expectKey {
				s.capKey, s.expectKey = true, false
			} else if s.capID {
				s.captureID(c)
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 {
				s.expectKey = c == '{'
			} else if s.capID {
				s.captureID(c)
			}
		case '}', ']':
			if s.depth == 1 {
				s.capID = false
			} else if s.capID {
				s.captureID(c)
			}
			s.depth--
		case ':':
			if s.depth == 1 {
				if s.cur == "id" {
					s.capID, s.id = true, s.id[:0]
				}
			} else if s.capID {
				s.captureID(c)
			}
		case ',':
			if s.depth == 1 {
				s.capID, s.expectKey, s.cur = false, true, ""
			} else if s.capID {
				s.captureID(c)
			}
		case ' ', '\t', '\r', '\n':
		default:
			if s.capID {
				s.captureID(c)
			}
		}
	}
}

func (s *frameScanner) captureID(c byte) {
	if len(s.id) >= maxIDBytes {
		s.idLost = true
		return
	}
	s.id = append(s.id, c)
}

func (s *frameScanner) response() bool { return !s.hasMethod && len(s.id) > 0 && !s.idLost }

// answer is the error response that stands in for the dropped frame, or nil
// when the frame was not a response with a usable id.
func (s *frameScanner) answer(max int) jsonrpc.Message {
	if !s.response() {
		return nil
	}
	var v any
	if json.Unmarshal(s.id, &v) != nil {
		return nil
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return nil
	}
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    codeTooLarge,
		Message: fmt.Sprintf("the server's response is at least %d bytes, over the %d-byte cap; it was discarded unread", s.n, max),
	}}
}
