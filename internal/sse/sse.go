package sse

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrGone is what Event returns once a write failed: the client went away,
// and nothing more will reach it.
var ErrGone = errors.New("the event stream's client is gone")

// Writer writes one event stream. The response is committed (200,
// text/event-stream) by Start or the first Event, so that a handler that
// fails before anything happened can still answer with a proper status.
// Event may be called from several goroutines.
type Writer struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	heartbeat time.Duration

	mu      sync.Mutex // guards w and the fields below
	started bool
	gone    bool // a write failed
	stop    chan struct{}
	done    chan struct{}
}

// New returns a writer on w that, once started, sends a ": keep-alive"
// comment every heartbeat (none when heartbeat <= 0).
func New(w http.ResponseWriter, heartbeat time.Duration) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), heartbeat: heartbeat}
}

// Start commits the response and starts the heartbeat. Safe to call twice.
func (s *Writer) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
}

func (s *Writer) startLocked() {
	if s.started {
		return
	}
	s.started = true
	s.rc.SetWriteDeadline(time.Time{}) // not every writer has one to lift
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	s.w.WriteHeader(http.StatusOK)
	s.flushLocked()
	if s.heartbeat > 0 {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.beat(s.stop, s.done)
	}
}

// Started reports whether the response is committed.
func (s *Writer) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// Event sends one event: its name and v as JSON on one data line. It
// starts the stream if need be. The error is v's encoding error, with
// nothing sent, or ErrGone.
func (s *Writer) Event(name string, v any) error { return s.event("", name, v) }

// EventID is Event with an id line, which a client that reconnects sends
// back as Last-Event-ID (see After): for streams that can resume.
func (s *Writer) EventID(id uint64, name string, v any) error {
	return s.event(fmt.Sprintf("id: %d\n", id), name, v)
}

// After is where a resumable stream starts: the Last-Event-ID header, or
// the after query parameter, as an event id; 0 when neither is set.
func After(r *http.Request) (uint64, error) {
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	if after == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(after, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Last-Event-ID (or after) %q is not an event id", after)
	}
	return n, nil
}

func (s *Writer) event(idLine, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a %s event: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.startLocked()
	if s.gone {
		return ErrGone
	}
	if _, err := fmt.Fprintf(s.w, "%sevent: %s\ndata: %s\n\n", idLine, name, b); err != nil {
		s.gone = true
		return ErrGone
	}
	s.flushLocked()
	return nil
}

func (s *Writer) flushLocked() {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.gone = true
	}
}

func (s *Writer) beat(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.gone {
				if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
					s.gone = true
				} else {
					s.flushLocked()
				}
			}
			s.mu.Unlock()
		}
	}
}

// Stop ends the heartbeat and waits for it, so that the handler may return
// (after which w must not be written). Events may still be sent after it.
// Safe to call twice, and when the stream never started.
func (s *Writer) Stop() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
