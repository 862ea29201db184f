// Package events is the daemon's in-process fan-out of lifecycle and
// registry changes to its watchers: the SSE stream, the console and the
// metrics. Publishing never blocks: a subscriber that falls behind loses
// events and is told so (Lagged), and is expected to refetch the state,
// because a slow browser tab must never stall a hot swap.
package events
