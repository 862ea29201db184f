package embed

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// health reports the endpoint's failures to the log without flooding it:
// a failure line at most once per interval, carrying the count of failures
// since the previous line, and one recovery line after a reported failure.
// A flapping endpoint thus costs at most two lines per interval.
type health struct {
	log        hclog.Logger
	every      time.Duration
	model, url string
	failures   atomic.Uint64 // every failure, for Stats

	mu         sync.Mutex // guards the fields below; never held while logging
	lastLine   time.Time  // of the last failure line
	reported   bool       // a failure line is out and no recovery line followed it
	unreported int        // failures no line has counted yet
}

func (h *health) failed(err error) {
	h.failures.Add(1)
	now := time.Now()
	h.mu.Lock()
	h.unreported++
	n := h.unreported
	report := h.lastLine.IsZero() || now.Sub(h.lastLine) >= h.every
	if report {
		h.unreported, h.lastLine, h.reported = 0, now, true
	}
	h.mu.Unlock()
	if report {
		h.log.Warn("embedding endpoint failing; searches fall back to text ranking",
			"error", err, "failures", n, "next_report_in", h.every, "model", h.model, "url", h.url)
	}
}

func (h *health) succeeded() {
	h.mu.Lock()
	report := h.reported
	h.reported = false
	n := h.unreported
	if report {
		h.unreported = 0
	}
	h.mu.Unlock()
	if report {
		h.log.Info("embedding endpoint answering again; reranking resumed", "unreported_failures", n, "model", h.model)
	}
}
