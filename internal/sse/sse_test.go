package sse

import (
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestEventsAndHeaders(t *testing.T) {
	w := httptest.NewRecorder()
	s := New(w, 0)
	if s.Started() {
		t.Fatal("started before anything was sent")
	}
	if err := s.Event("state", map[string]int{"tools": 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.Event("bad", math.NaN()); err == nil || errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "encoding a bad event") {
		t.Errorf("unencodable event: %v", err)
	}
	s.Stop()
	s.Stop()
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream; charset=utf-8" || w.Header().Get("X-Accel-Buffering") != "no" {
		t.Errorf("answer: %d %v", w.Code, w.Header())
	}
	if got := w.Body.String(); got != "event: state\ndata: {\"tools\":3}\n\n" {
		t.Errorf("body %q", got)
	}
}

// failing is a ResponseWriter whose client went away.
type failing struct{ httptest.ResponseRecorder }

func (f *failing) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestGoneClient(t *testing.T) {
	s := New(&failing{*httptest.NewRecorder()}, 0)
	if err := s.Event("a", 1); !errors.Is(err, ErrGone) {
		t.Fatalf("first write to a gone client: %v", err)
	}
	if err := s.Event("b", 2); !errors.Is(err, ErrGone) {
		t.Fatalf("second write: %v", err)
	}
}

// syncRecorder is a ResponseRecorder the heartbeat goroutine and the test
// may share.
type syncRecorder struct {
	mu sync.Mutex
	httptest.ResponseRecorder
}

func (r *syncRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ResponseRecorder.Write(b)
}

func (r *syncRecorder) WriteString(s string) (int, error) { return r.Write([]byte(s)) }

func (r *syncRecorder) body() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Body.String()
}

// TestHeartbeat: an idle stream gets a comment every period, and none
// after Stop; synctest's clock makes the periods exact.
func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &syncRecorder{ResponseRecorder: *httptest.NewRecorder()}
		s := New(w, 15*time.Second)
		s.Start()
		time.Sleep(15*time.Second - time.Nanosecond)
		synctest.Wait()
		if got := w.body(); got != "" {
			t.Fatalf("before the first period: %q", got)
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if got := w.body(); got != ": keep-alive\n\n" {
			t.Fatalf("after one period: %q", got)
		}
		s.Event("x", 1)
		s.Stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := w.body(); got != ": keep-alive\n\nevent: x\ndata: 1\n\n" {
			t.Fatalf("after Stop: %q", got)
		}
	})
}

func TestEventIDAndAfter(t *testing.T) {
	w := httptest.NewRecorder()
	s := New(w, 0)
	if err := s.EventID(7, "team.spawned", map[string]string{"name": "fe-dev"}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if got := w.Body.String(); got != "id: 7\nevent: team.spawned\ndata: {\"name\":\"fe-dev\"}\n\n" {
		t.Errorf("body %q", got)
	}
	for _, c := range []struct {
		header, query string
		want          uint64
		bad           bool
	}{{"", "", 0, false}, {"12", "", 12, false}, {"", "5", 5, false}, {"12", "5", 12, false}, {"x", "", 0, true}, {"", "-1", 0, true}} {
		r := httptest.NewRequest("GET", "/events?after="+c.query, nil)
		if c.header != "" {
			r.Header.Set("Last-Event-ID", c.header)
		}
		got, err := After(r)
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("Last-Event-ID %q, after %q: %d, %v", c.header, c.query, got, err)
		}
	}
}
