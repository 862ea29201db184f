package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// TestHostDeadline checks that the deadline the host sends as timeout_ns
// reaches the handler's context, that an earlier gRPC deadline wins, and
// that Err says DeadlineExceeded once the host cancels past the deadline.
func TestHostDeadline(t *testing.T) {
	s := New("dl", "1.0.0", "Deadline probe.")
	Tool(s, "left", "Report the ms left before the deadline.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		d, ok := ctx.Deadline()
		return map[string]any{"has": ok, "left_ms": time.Until(d).Milliseconds()}, nil
	})
	sv := s.Server(nil)
	call := func(ctx context.Context, timeout time.Duration) (has bool, left int64) {
		t.Helper()
		resp, err := sv.Invoke(ctx, &skillpb.InvokeRequest{Tool: "left", Arguments: []byte(`{}`), TimeoutNs: int64(timeout)})
		if err != nil || resp.Error != nil {
			t.Fatalf("invoke: %v %v", err, resp.GetError())
		}
		var out struct {
			Has    bool  `json:"has"`
			LeftMS int64 `json:"left_ms"`
		}
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out.Has, out.LeftMS
	}
	if has, left := call(context.Background(), 5*time.Second); !has || left < 4_000 || left > 5_000 {
		t.Errorf("timeout_ns 5s: deadline %v, %d ms left", has, left)
	}
	if has, _ := call(context.Background(), 0); has {
		t.Error("no timeout_ns: the handler has a deadline")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if has, left := call(ctx, 5*time.Second); !has || left > 1_000 {
		t.Errorf("an earlier gRPC deadline: deadline %v, %d ms left", has, left)
	}

	parent, stop := context.WithCancel(context.Background())
	c := withHostDeadline(parent, time.Now().Add(time.Hour))
	stop() // the caller gave up before the deadline
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("cancelled before the deadline: Err = %v", c.Err())
	}
	parent, stop = context.WithCancel(context.Background())
	c = withHostDeadline(parent, time.Now().Add(-time.Millisecond))
	stop() // the host's timer fired
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("cancelled at the deadline: Err = %v", c.Err())
	}
	parent, stop = context.WithCancel(context.Background())
	c = withHostDeadline(parent, time.Now().Add(2*deadlineSlack))
	stop()
	first := c.Err() // Canceled, unless this machine is slow
	time.Sleep(2 * deadlineSlack)
	if c.Err() != first {
		t.Errorf("Err changed from %v to %v as the deadline passed", first, c.Err())
	}
	parent, stop = context.WithCancel(context.Background())
	c = withHostDeadline(parent, time.Now().Add(deadlineSlack/2))
	c.Done() // a channel of its own, closed by the gRPC context's end
	stop()   // the host's timer fired, its deadline a little before the skill's copy
	<-c.Done()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("cancelled just before the skill's copy of the deadline: Err = %v", c.Err())
	}
}

// within receives from ch, failing the test after 10 s rather than hang.
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived in 10 s")
		panic("unreachable")
	}
}

// TestHostDeadlineInDerivedContexts checks that a context a handler derives
// from its ctx ends as ctx does, with the same Err: DeadlineExceeded when
// the host cancels the call at its deadline (a derived context used to
// inherit the gRPC context's Canceled), Canceled when the caller gave up
// first; that context.AfterFunc runs; and that ctx ends when the call
// returns, also for a goroutine the handler left waiting.
func TestHostDeadlineInDerivedContexts(t *testing.T) {
	type report struct{ ctx, derived, afterFunc error }
	derived := make(chan struct{})
	reports := make(chan report, 1)
	left := make(chan error, 1)
	s := New("dl", "1.0.0", "Deadline probe.")
	Tool(s, "derive", "Wait on a derived context.", func(ctx context.Context, in struct{}) (struct{}, error) {
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		go func() { <-ctx.Done(); left <- ctx.Err() }() // outlives the call
		derived <- struct{}{}
		<-child.Done()
		<-ran
		reports <- report{ctx.Err(), child.Err(), nil}
		return struct{}{}, child.Err()
	})
	sv := s.Server(nil)
	for _, c := range []struct {
		name    string
		timeout time.Duration
		want    error
		code    codes.Code
	}{
		{"at the deadline", time.Nanosecond, context.DeadlineExceeded, codes.DeadlineExceeded},
		{"before the deadline", time.Hour, context.Canceled, codes.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The gRPC context of the call, which the host cancels.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errs := make(chan error, 1)
			go func() {
				_, err := sv.Invoke(ctx, &skillpb.InvokeRequest{Tool: "derive", Arguments: []byte(`{}`), TimeoutNs: int64(c.timeout)})
				errs <- err
			}()
			within(t, derived)
			cancel()
			r := within(t, reports)
			if r.ctx != c.want || r.derived != c.want {
				t.Errorf("ctx.Err = %v, derived Err = %v; want %v", r.ctx, r.derived, c.want)
			}
			if err := within(t, errs); status.Code(err) != c.code {
				t.Errorf("Invoke = %v, want a %v status", err, c.code)
			}
			if err := within(t, left); err != c.want {
				t.Errorf("the goroutine left behind saw %v, want %v", err, c.want)
			}
		})
	}
	t.Run("call returns", func(t *testing.T) {
		// A parent that outlives the call, as an in-process host's may.
		s := New("dl", "1.0.0", "Deadline probe.")
		Tool(s, "leave", "Leave a goroutine waiting on ctx.", func(ctx context.Context, in struct{}) (struct{}, error) {
			go func() { <-ctx.Done(); left <- ctx.Err() }()
			return struct{}{}, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := s.Server(nil).Invoke(ctx, &skillpb.InvokeRequest{Tool: "leave", Arguments: []byte(`{}`), TimeoutNs: int64(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := within(t, left); err != context.Canceled {
			t.Errorf("after the call ctx.Err = %v, want Canceled", err)
		}
	})
}

// BenchmarkInvokeWithHostDeadline is the SDK's own cost per call as the
// host makes them, with timeout_ns: a handler that never looks at ctx,
// and one that waits on ctx.Done in a select, as a handler calling a
// context-aware API does.
func BenchmarkInvokeWithHostDeadline(b *testing.B) {
	s := New("bench", "1.0.0", "Deadline benchmark.")
	Tool(s, "plain", "Answer at once.", func(ctx context.Context, in struct{}) (struct{}, error) {
		return struct{}{}, nil
	})
	ready := make(chan struct{})
	close(ready)
	Tool(s, "done", "Answer after a select on ctx.Done.", func(ctx context.Context, in struct{}) (struct{}, error) {
		select {
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		case <-ready:
			return struct{}{}, nil
		}
	})
	sv := s.Server(nil)
	for _, tool := range []string{"plain", "done"} {
		b.Run(tool, func(b *testing.B) {
			req := &skillpb.InvokeRequest{Tool: tool, Arguments: []byte(`{}`), TimeoutNs: int64(30 * time.Second)}
			b.ReportAllocs()
			for b.Loop() {
				// A cancellable context per call, as gRPC gives each stream.
				ctx, cancel := context.WithCancel(context.Background())
				if _, err := sv.Invoke(ctx, req); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
		})
	}
}
