package mcp

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// sdkLogger adapts the host's hclog logger to the *slog.Logger the go-sdk
// takes. The SDK's warnings are mostly about one client (a keepalive ping it
// did not answer, a notification it could not be sent), so they are logged
// one level lower than the SDK rates them: the daemon's log stays about the
// daemon.
func sdkLogger(l hclog.Logger) *slog.Logger {
	return slog.New(&slogHandler{log: l})
}

type slogHandler struct {
	log   hclog.Logger
	attrs []any
	group string
}

func demote(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Warn
	case l >= slog.LevelWarn:
		return hclog.Debug
	default:
		return hclog.Trace
	}
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= demote(l)
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.group+a.Key, a.Value.Resolve().Any())
		return true
	})
	h.log.Log(demote(r.Level), r.Message, args...)
	return nil
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &slogHandler{log: h.log, group: h.group, attrs: append([]any(nil), h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, h.group+a.Key, a.Value.Resolve().Any())
	}
	return n
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &slogHandler{log: h.log, attrs: h.attrs, group: h.group + name + "."}
}
