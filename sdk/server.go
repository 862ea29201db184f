package sdk

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// server implements skillpb.SkillServer over a Skill's tools.
type server struct {
	skillpb.UnimplementedSkillServer
	s   *Skill
	log hclog.Logger
}

// Server returns s as a gRPC skill service. Serve uses it; sdk/skilltest and
// hosts that embed a skill in-process use it directly.
func (s *Skill) Server(log hclog.Logger) skillpb.SkillServer {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &server{s: s, log: log}
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
		ctx = withHostDeadline(ctx, time.Now().Add(time.Duration(req.TimeoutNs)))
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
// which closes Done. Err says DeadlineExceeded once the deadline has passed,
// as a context with a timer would.
type hostDeadline struct {
	context.Context
	d time.Time
}

func (c hostDeadline) Deadline() (time.Time, bool) { return c.d, true }

func (c hostDeadline) Err() error {
	err := c.Context.Err()
	if err != nil && !time.Now().Before(c.d) {
		return context.DeadlineExceeded
	}
	return err
}

// withHostDeadline gives ctx deadline d unless it already has an earlier
// one (a gRPC deadline of a caller that sends one, such as skilltest).
func withHostDeadline(ctx context.Context, d time.Time) context.Context {
	if cur, ok := ctx.Deadline(); ok && !d.Before(cur) {
		return ctx
	}
	return hostDeadline{ctx, d}
}
