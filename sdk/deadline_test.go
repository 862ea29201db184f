package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

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
	c := withHostDeadline(parent, time.Now().Add(20*time.Millisecond))
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
}
