package sdk_test

import (
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// frameCounter counts the HTTP/2 PING frames (not their ACKs) in one
// direction of a connection, parsing frame headers as the bytes pass.
type frameCounter struct {
	mu      sync.Mutex
	skip    int // bytes of the client preface still to skip
	pending []byte
	pings   int
}

func (f *frameCounter) feed(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, b...)
	if f.skip > 0 {
		n := min(f.skip, len(f.pending))
		f.pending, f.skip = f.pending[n:], f.skip-n
	}
	for len(f.pending) >= 9 {
		length := int(f.pending[0])<<16 | int(binary.BigEndian.Uint16(f.pending[1:3]))
		if len(f.pending) < 9+length {
			return
		}
		if typ, flags := f.pending[3], f.pending[4]; typ == 0x6 && flags&0x1 == 0 {
			f.pings++
		}
		f.pending = f.pending[9+length:]
	}
}

func (f *frameCounter) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pings
}

// countingConn feeds what the client writes and reads to two counters.
type countingConn struct {
	net.Conn
	sent, received *frameCounter
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.sent.feed(b)
	return c.Conn.Write(b)
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.received.feed(b[:n])
	return n, err
}

// TestCallsSendNoPings checks that a connection set up as the host and the
// SDK set theirs up (sdk.DialOptions, GRPCServerFactory) carries calls with
// no PING from either end: gRPC's bandwidth estimator, which the fixed
// windows turn off, would otherwise ping after nearly every message.
func TestCallsSendNoPings(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := sdk.GRPCServerFactory(nil)
	skillpb.RegisterSkillServer(srv, testSkill().Server(nil))
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()

	fromClient := &frameCounter{skip: len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")}
	fromServer := &frameCounter{}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, sent: fromClient, received: fromServer}, nil
	}
	opts := append(sdk.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(sdk.Codec)))
	cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	rpc := skillpb.NewSkillClient(cc)
	ctx := context.Background()
	const calls = 50
	for i := range calls {
		resp, err := rpc.Invoke(ctx, &skillpb.InvokeRequest{Tool: "add", Arguments: []byte(`{"a":1,"b":2}`)})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if string(resp.Result) != `{"sum":3}` {
			t.Fatalf("call %d: result %s", i, resp.Result)
		}
	}
	if c, s := fromClient.count(), fromServer.count(); c != 0 || s != 0 {
		t.Errorf("%d calls carried %d PINGs from the client and %d from the server, want none (are the windows fixed on both ends?)", calls, c, s)
	}
}
