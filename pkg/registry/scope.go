package registry

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultMaxCallDepth is how many tools one chain of calls may hold when
// Config.MaxCallDepth is zero: the call a face made and three levels of
// calls made by skills beneath it. A chain deeper than that is almost
// always a loop through tools that are each new to it, and every level
// holds a concurrency slot and a lease of its skill while it waits.
const DefaultMaxCallDepth = 4

// frame is what the registry knows of one call in flight, and what a nested
// call inherits from it: the context a Backend's Invoke receives is the
// call's frame, so a skill's call back through the host (the loader's Host
// service), made with that context, runs under the scope of the call it is
// made from. Being the context itself, rather than a value added with
// context.WithValue, makes it one allocation per call. Frames link to their
// parent; they are immutable.
type frame struct {
	context.Context
	parent *frame
	tool   string // qualified name
	id     uint64
	permit Permit // the caller's own; nil lets every tool through; binds the calls beneath too
	allow  Permit // InvokeAllowed's: binds this call alone
	depth  int    // 1 for a call a face made
	ids    *callIDs
}

type frameKey struct{}

// callIDs numbers the calls of one registry. The prefix keeps the ids of
// two runs of the host apart in logs kept across restarts.
type callIDs struct {
	prefix string
	next   atomic.Uint64
}

func newCallIDs() *callIDs {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on Linux; a zero prefix would still be usable
	return &callIDs{prefix: strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 36)}
}

func (f *frame) callID() string {
	if f == nil {
		return ""
	}
	return f.ids.prefix + "-" + strconv.FormatUint(f.id, 36)
}

// Value finds the frame itself under frameKey; every other key is the
// caller's context's.
func (f *frame) Value(key any) any {
	if key == (frameKey{}) {
		return f
	}
	return f.Context.Value(key)
}

func frameFrom(ctx context.Context) *frame {
	f, _ := ctx.Value(frameKey{}).(*frame)
	return f
}

// CallID is the id of the call whose context ctx is (the context a Backend's
// Invoke receives, or one derived from it), or "" outside a call. Logs,
// events and a nested call's ParentID use it.
func CallID(ctx context.Context) string { return frameFrom(ctx).callID() }

// CallChain is the qualified names of the tools on ctx's chain of calls,
// outermost first: ["policyassist.answer", "calc.evaluate"] inside calc's
// call made by policyassist. Nil outside a call.
func CallChain(ctx context.Context) []string {
	f := frameFrom(ctx)
	if f == nil {
		return nil
	}
	out := make([]string, f.depth)
	for i := f.depth - 1; f != nil; i, f = i-1, f.parent {
		out[i] = f.tool
	}
	return out
}

// NestedCall describes one finished call made from inside another (a skill
// calling a tool through the host), for Config.OnNested.
type NestedCall struct {
	ID       string        // this call's id
	ParentID string        // the id of the call it was made from
	Caller   string        // the tool that made it (skill.tool)
	Tool     string        // the tool called, as named by the caller
	Depth    int           // 2 for a call made by a tool a face called
	Code     Code          // "" on success
	Duration time.Duration // the call's time, included in its parent's
}

// checkScope refuses t to a call made under parent when the chain would be
// too deep, would call a tool already on it, or when a permit of any call
// on the chain refuses t: a nested call runs under its callers' scope, never
// more. Its errors are forbidden *Errors that name the whole chain.
func (r *Registry) checkScope(parent *frame, t *Tool) error {
	if parent == nil {
		return nil
	}
	chain := func() string {
		names := []string{t.Name}
		for f := parent; f != nil; f = f.parent {
			names = append(names, f.tool)
		}
		for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
			names[i], names[j] = names[j], names[i]
		}
		return strings.Join(names, " → ")
	}
	for f := parent; f != nil; f = f.parent {
		if f.tool == t.Name {
			return Errorf(CodeForbidden, "call cycle: %s calls %s, which is already on its chain (%s)", parent.tool, t.Name, chain()).
				With("reason", "cycle").With("caller", parent.tool).With("tool", t.Name).With("chain", strings.Split(chain(), " → "))
		}
	}
	if max := r.maxDepth(); parent.depth >= max {
		return Errorf(CodeForbidden, "%s may not call %s: the chain %s would be %d calls deep, over the limit of %d", parent.tool, t.Name, chain(), parent.depth+1, max).
			With("reason", "depth").With("caller", parent.tool).With("tool", t.Name).With("limit", max)
	}
	for f := parent; f != nil; f = f.parent {
		if f.permit == nil {
			continue
		}
		if err := f.permit(t); err != nil {
			e := AsError(err)
			return Errorf(CodeForbidden, "%s may not call %s: the scope of the call to %s refuses it (%s)", parent.tool, t.Name, f.tool, e.Message).
				With("reason", "scope").With("caller", parent.tool).With("tool", t.Name).With("refused_by", f.tool)
		}
	}
	return nil
}

func (r *Registry) maxDepth() int {
	if r.cfg.MaxCallDepth > 0 {
		return r.cfg.MaxCallDepth
	}
	return DefaultMaxCallDepth
}
