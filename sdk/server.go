package sdk

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// server implements skillpb.SkillServer over a Skill's tools.
type server struct {
	skillpb.UnimplementedSkillServer
	s    *Skill
	log  hclog.Logger
	host *hostConn // the host's Host service, for Call
}

// Server returns s as a gRPC skill service. Serve uses it; sdk/skilltest and
// hosts that embed a skill in-process use it directly.
func (s *Skill) Server(log hclog.Logger) skillpb.SkillServer {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &server{s: s, log: log, host: &hostConn{}}
}

func (sv *server) Describe(context.Context, *skillpb.DescribeRequest) (*skillpb.DescribeResponse, error) {
	resp := &skillpb.DescribeResponse{
		Name: sv.s.Name, Version: sv.s.Version, Description: sv.s.Description,
		Tags: sv.s.Tags, SdkVersion: Version,
	}
	for _, name := range sv.s.order {
		t := sv.s.tools[name]
		resp.Tools = append(resp.Tools, &skillpb.Tool{
			Name: t.name, Description: t.description,
			InputSchema: t.input, OutputSchema: t.output, Tags: t.tags,
			Annotations: &skillpb.Annotations{
				ReadOnly: t.ann.ReadOnly, Destructive: t.ann.Destructive,
				Idempotent: t.ann.Idempotent, OpenWorld: t.ann.OpenWorld,
			},
		})
	}
	return resp, nil
}

func (sv *server) Invoke(ctx context.Context, req *skillpb.InvokeRequest) (resp *skillpb.InvokeResponse, err error) {
	t, ok := sv.s.tools[req.Tool]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "skill %s has no tool %q", sv.s.Name, req.Tool)
	}
	defer func() {
		if p := recover(); p != nil {
			sv.log.Error("tool panicked", "tool", req.Tool, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp, err = &skillpb.InvokeResponse{Error: &skillpb.ToolError{
				Code: "panic", Message: fmt.Sprintf("tool %s panicked: %v", req.Tool, p),
			}}, nil
		}
	}()
	if req.TimeoutNs > 0 {
		if hd := withHostDeadline(ctx, time.Now().Add(time.Duration(req.TimeoutNs))); hd != nil {
			defer hd.release()
			ctx = hd
		}
	}
	if req.CallToken != 0 || req.CallId != "" {
		// Only a host that serves nested calls to this skill sends these:
		// other calls pay nothing for Call.
		ctx = context.WithValue(ctx, callKey{}, &callInfo{token: req.CallToken, id: req.CallId, broker: req.HostBrokerId, host: sv.host})
	}
	out, herr := t.call(ctx, req.Arguments)
	if herr != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(herr, ctxErr) {
			// The host gave up; report it as the transport would.
			return nil, status.FromContextError(ctxErr).Err()
		}
		te := asToolError(herr)
		return &skillpb.InvokeResponse{Error: &skillpb.ToolError{
			Code: te.Code, Message: te.Message, Retryable: te.Retryable,
		}}, nil
	}
	return &skillpb.InvokeResponse{Result: out}, nil
}

// hostDeadline shows a handler the host's deadline (InvokeRequest.timeout_ns)
// without a timer of its own: the host cancels the call when the time is up,
// which ends the call's gRPC context. Err then says DeadlineExceeded, as a
// context with a timer would, and so do the contexts the handler derives
// from it (context.WithCancel, errgroup, ...).
//
// That is why Done is a channel of its own and not the gRPC context's:
// given a parent whose Done is that of a context package cancelCtx found
// through Value, a derived context would register with that cancelCtx and
// inherit its Canceled. With a Done of its own it registers through
// AfterFunc instead, and takes Err from here. The channel, and the one
// AfterFunc on the gRPC context behind it, are made on the first Done, so a
// handler that never waits on ctx costs one allocation.
//
// A cancellation counts as the deadline from deadlineSlack before it: the
// host sends the time left, and the skill's copy of the deadline is later
// than the host's by the time the request took to arrive, while the reset
// stream that cancels the call takes about as long. Either may win.
type hostDeadline struct {
	context.Context // the call's gRPC context: values, and its end
	d               time.Time

	mu    sync.Mutex       // guards the fields below
	done  chan struct{}    // made by the first Done, closed by end
	err   error            // why c ended; set before done is closed
	stop  func() bool      // ends the AfterFunc on the gRPC context that calls end
	after map[*func()]bool // AfterFunc's functions, called by end
}

const deadlineSlack = 10 * time.Millisecond

func (c *hostDeadline) Deadline() (time.Time, bool) { return c.d, true }

func (c *hostDeadline) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch()
	return c.done
}

// watch makes done and has end called when the gRPC context ends. c.mu is
// held.
func (c *hostDeadline) watch() {
	if c.done != nil {
		return
	}
	c.done = make(chan struct{})
	if err := c.Context.Err(); err != nil {
		c.err = c.reason(err)
		close(c.done)
		return
	}
	c.stop = context.AfterFunc(c.Context, func() { c.end(c.Context.Err()) })
}

func (c *hostDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		// No Done channel yet, so nothing waits on c: the gRPC context
		// decides, once.
		if err := c.Context.Err(); err != nil {
			c.err, c.done = c.reason(err), closedChan
		}
	}
	return c.err
}

// reason is what Err says once the gRPC context ended with err.
func (c *hostDeadline) reason(err error) error {
	if time.Now().After(c.d.Add(-deadlineSlack)) {
		return context.DeadlineExceeded
	}
	return err
}

// AfterFunc is what the context package calls, for a parent it does not
// know, to cancel a derived context (and what context.AfterFunc calls).
// It calls f, once, when c ends.
func (c *hostDeadline) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.after == nil {
		c.after = map[*func()]bool{}
	}
	key := &f
	c.after[key] = true
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		registered := c.after[key]
		delete(c.after, key)
		return registered
	}
}

// end records why c ended, closes done and runs AfterFunc's functions; it
// does nothing the second time.
func (c *hostDeadline) end(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = c.reason(err)
	if c.done == nil {
		c.done = closedChan // nobody waits: spare the allocation
	} else {
		close(c.done)
	}
	after := c.after
	c.after = nil
	c.mu.Unlock()
	for f := range after {
		(*f)()
	}
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// release ends c when the call returns, as gRPC ends a call's context, and
// stops watching the gRPC context, which may outlive the call (the context
// of a host that serves the skill in-process, say).
func (c *hostDeadline) release() {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.end(context.Canceled)
}

// withHostDeadline gives ctx deadline d, or returns nil when ctx already has
// an earlier one (a gRPC deadline of a caller that sends one, such as
// skilltest).
func withHostDeadline(ctx context.Context, d time.Time) *hostDeadline {
	if cur, ok := ctx.Deadline(); ok && !d.Before(cur) {
		return nil
	}
	return &hostDeadline{Context: ctx, d: d}
}
