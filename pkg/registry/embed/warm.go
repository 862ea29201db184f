package embed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillhost/skillhost/pkg/registry"
)

// warmQuiet is how long Watch waits for the registry to settle before it
// embeds: a startup that loads skills one by one costs one pass, not one
// per skill.
const warmQuiet = 200 * time.Millisecond

// Watch embeds, in the background, the tools of reg that have no cached
// vector yet: now, and after every change of the registry (bursts merged),
// so that searches rarely wait for a tool vector. A failed pass is retried
// after LogInterval. The goroutine is the Reranker's: Close stops it and
// waits for it. Watch may be called once.
func (r *Reranker) Watch(reg *registry.Registry) error {
	r.watchMu.Lock()
	defer r.watchMu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if r.watching {
		return errors.New("embed: already watching a registry")
	}
	r.watching = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.watch(reg)
	}()
	return nil
}

func (r *Reranker) watch(reg *registry.Registry) {
	for {
		changed := reg.Changed() // before the snapshot, so no change is missed
		var retry <-chan time.Time
		if err := r.Warm(r.ctx, reg.Snapshot().Tools()); err != nil && r.ctx.Err() == nil {
			retry = time.After(r.cfg.LogInterval) // collected once unreferenced (Go 1.23+)
		}
		select {
		case <-r.ctx.Done():
			return
		case <-retry:
			continue
		case <-changed:
		}
		// Let a burst of changes settle.
		quiet := time.NewTimer(warmQuiet)
		for settled := false; !settled; {
			select {
			case <-r.ctx.Done():
				quiet.Stop()
				return
			case <-reg.Changed():
				quiet.Reset(warmQuiet)
			case <-quiet.C:
				settled = true
			}
		}
	}
}

// Warm embeds those of tools that have no cached vector, BatchSize per
// request, each request bounded by WarmTimeout. Only the first CacheSize
// tools are considered: warming more would evict what it just computed.
// Failures are reported like a search's, and the first is returned.
func (r *Reranker) Warm(ctx context.Context, tools []*registry.Tool) error {
	tools = tools[:min(len(tools), r.cfg.CacheSize)]
	keys := make([]toolKey, len(tools)) // hashed outside the lock searches take
	for i, t := range tools {
		keys[i] = keyOf(t)
	}
	r.cacheMu.Lock()
	var missing []*registry.Tool
	for i, k := range keys {
		if !r.tools.has(k) && r.pending[k] == nil {
			missing = append(missing, tools[i])
		}
	}
	r.cacheMu.Unlock()
	for len(missing) > 0 {
		n := min(len(missing), r.cfg.BatchSize)
		bctx, cancel := context.WithTimeoutCause(ctx, r.cfg.WarmTimeout, errTimedOut)
		_, _, err := r.vectors(bctx, "", false, missing[:n])
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			err = fmt.Errorf("warming tool vectors: %w", err)
			r.health.failed(err)
			return err
		}
		missing = missing[n:]
		r.health.succeeded()
	}
	return nil
}
