package team

import (
	"context"
	"fmt"
	"time"
)

// WaitTasks waits until every named task is done (completed or failed)
// and returns them, so the lead waits for work it gave out instead of
// polling or handing it out again. It returns early with an error
// wrapping ErrTimeout after timeout (no limit when timeout <= 0), ctx's
// error when ctx ends, and ErrUnknownTask at once for an unknown id.
// Waiting holds a channel, not a loop: every change to the team closes it.
func (t *Team) WaitTasks(ctx context.Context, ids []string, timeout time.Duration) ([]Task, error) {
	return waitFor(ctx, t, timeout, func() ([]Task, bool, error) {
		out := make([]Task, len(ids))
		done := true
		for i, id := range ids {
			if t.st.tasks[id] == nil {
				return nil, false, fmt.Errorf("team %s: wait for task %q: %w", t.id, id, ErrUnknownTask)
			}
			out[i] = t.taskLocked(id)
			done = done && out[i].Done()
		}
		return out, done, nil
	})
}

// WaitMembers waits until every named member has nothing to do: stopped,
// or idle (not running) with an empty inbox. The lead uses it to wait for
// teammates to finish their turns; the errors are WaitTasks'.
func (t *Team) WaitMembers(ctx context.Context, names []string, timeout time.Duration) ([]Member, error) {
	return waitFor(ctx, t, timeout, func() ([]Member, bool, error) {
		out := make([]Member, len(names))
		done := true
		for i, name := range names {
			ms := t.st.members[name]
			if ms == nil {
				return nil, false, fmt.Errorf("team %s: wait for member %q: %w", t.id, name, ErrUnknownMember)
			}
			out[i] = t.memberLocked(name, ms)
			mb := t.members[name]
			idle := mb != nil && !mb.running && out[i].InboxDepth == 0 && ms.status != StatusStopping
			done = done && (ms.status == StatusStopped || idle)
		}
		return out, done, nil
	})
}

// waitFor evaluates check under t.mu each time the team changes, until it
// is done, fails, or the wait ends.
func waitFor[T any](ctx context.Context, t *Team, timeout time.Duration, check func() (T, bool, error)) (T, error) {
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	for {
		t.mu.Lock()
		v, done, err := check()
		changed, closed := t.changed, t.closed
		t.mu.Unlock()
		switch {
		case err != nil:
			return v, err
		case done:
			return v, nil
		case closed:
			return v, fmt.Errorf("team %s: %w", t.id, ErrClosed)
		}
		select {
		case <-changed:
		case <-expired:
			return v, fmt.Errorf("team %s: %w after %s", t.id, ErrTimeout, timeout)
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}
