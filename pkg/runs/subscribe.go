package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// subscriptionBatch bounds what one Subscription holds in memory: it reads
// the file in batches of about this many bytes (at least one record).
const subscriptionBatch = 256 << 10

// Subscription follows a run's events from a sequence number on: first
// the ones already logged, then new ones as they are appended. It reads
// the log file itself rather than receiving a copy of each event, so the
// file is its buffer: an appender never waits for a subscriber, nothing is
// ever dropped, and a subscriber that falls behind (a slow SSE client) just
// reads further back. Its memory is bounded by one batch. A Subscription
// is used by one goroutine; it holds no goroutine and needs no Close.
type Subscription struct {
	run   *Run
	after uint64  // seq of the last event returned
	buf   []Event // read but not yet returned
	ended bool    // the stop event was returned
}

// Subscribe follows the run from the event after seq after (0: from the
// start). An SSE handler passes the Last-Event-ID it was given.
func (r *Run) Subscribe(after uint64) *Subscription {
	return &Subscription{run: r, after: after}
}

// Subscribe is Store.Run followed by Run.Subscribe.
func (s *Store) Subscribe(runID string, after uint64) (*Subscription, error) {
	r, err := s.Run(runID)
	if err != nil {
		return nil, err
	}
	return r.Subscribe(after), nil
}

// LastSeq is the seq of the last event Next returned (or the starting
// point): what a follower that reconnects resumes from.
func (s *Subscription) LastSeq() uint64 { return s.after }

// Next returns the next event, waiting for one to be appended if the
// subscriber has caught up. It returns io.EOF after the run's stop event
// (a stopped run has no more), ctx's error when ctx ends first, and an
// error wrapping ErrClosed when the store is closed.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		if len(s.buf) > 0 {
			ev := s.buf[0]
			s.buf = s.buf[1:]
			s.after = ev.Seq
			s.ended = ev.Kind == KindStop
			return ev, nil
		}
		if s.ended {
			return Event{}, io.EOF
		}
		evs, changed, err := s.run.log.Read(s.after, subscriptionBatch)
		if len(evs) > 0 {
			s.buf = evs
			continue
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			return Event{}, fmt.Errorf("follow run %s: %w", s.run.id, err) // damaged file, failed write
		}
		// Caught up. A stop is always the last event, so a stopped run
		// has nothing more to give.
		if s.run.Stopped() {
			return Event{}, io.EOF
		}
		if err != nil {
			return Event{}, fmt.Errorf("follow run %s: %w", s.run.id, err)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}
