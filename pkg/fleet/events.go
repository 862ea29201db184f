package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrCompacted: the events asked for are older than what etcd still keeps
// (it compacted its history); a client must read the whole view again and
// follow from its revision.
var ErrCompacted = errors.New("fleet events before this revision were compacted")

// Event is one change of the fleet: a decision or a host record written or
// deleted. Revision is etcd's, so a client resumes after the last one it
// saw.
type Event struct {
	Revision int64           `json:"revision"`
	Kind     string          `json:"kind"` // "state", "desired" or "host"
	Name     string          `json:"name"` // the skill or the host id
	Type     string          `json:"type"` // "put" or "delete"
	Value    json.RawMessage `json:"value,omitempty"`
}

// Follow sends every change under prefix from revision from on (0: from
// now) until ctx ends or send fails. It returns ErrCompacted (wrapped, with
// the oldest revision still kept) when from is too old.
func Follow(ctx context.Context, cli *clientv3.Client, prefix string, from int64, send func(Event) error) error {
	base := strings.TrimSuffix(prefix, "/") + "/"
	hp, sp, dp := hostsPrefix(prefix), base+"state/", desiredPrefix(prefix)
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range cli.Watch(ctx, base, opts...) {
		if wr.CompactRevision != 0 {
			return fmt.Errorf("%w: the oldest kept is %d", ErrCompacted, wr.CompactRevision)
		}
		if err := wr.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("%w: %v", ErrCompacted, err)
			}
			return fmt.Errorf("fleet events: %w", err)
		}
		for _, ev := range wr.Events {
			k := string(ev.Kv.Key)
			e := Event{Revision: ev.Kv.ModRevision, Type: "put"}
			switch {
			case strings.HasPrefix(k, hp):
				e.Kind, e.Name = "host", strings.TrimPrefix(k, hp)
			case strings.HasPrefix(k, sp):
				e.Kind, e.Name = "state", strings.TrimPrefix(k, sp)
			case strings.HasPrefix(k, dp):
				e.Kind, e.Name = "desired", strings.TrimPrefix(k, dp)
			default:
				continue
			}
			if ev.Type == clientv3.EventTypeDelete {
				e.Type = "delete"
			} else if json.Valid(ev.Kv.Value) {
				e.Value = ev.Kv.Value
			}
			if err := send(e); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}
