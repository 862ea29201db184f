package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skillhost/skillhost/pkg/loader"
)

// Errors of the state store.
var (
	// ErrConflict: other writers changed the same skill's decisions every
	// time Update tried; nothing was written. Rare (it takes
	// updateAttempts lost races in a row); the caller may try again.
	ErrConflict = errors.New("conflicting updates")
)

// updateAttempts bounds how often Update re-reads and re-applies fn after
// losing a compare-and-swap race.
const updateAttempts = 16

// opTimeout bounds one etcd request of the store.
const opTimeout = 5 * time.Second

// Store keeps the operator's decisions in etcd, one key per skill, and is
// the loader's StateStore on every host of a fleet.
//
// Reads come from a local copy kept fresh by a watch, so the loader's scans
// never wait on the network. Update is a compare-and-swap on the key's mod
// revision: it reads the current decision, applies fn, and writes only if
// nobody wrote in between; if somebody did, it applies fn again to the
// fresh value. So two operators never overwrite each other unseen: a
// disable and a pin made at once on two hosts both land, because each
// function changes only its own field. fn may therefore run more than
// once, and must depend only on its argument.
type Store struct {
	cli    *clientv3.Client
	prefix string // <prefix>/state/
	log    hclog.Logger

	mu        sync.Mutex // guards decisions and revs
	decisions map[string]loader.Decision
	revs      map[string]int64 // revision of what decisions holds per skill, deleted ones included

	changes chan struct{} // capacity 1: one pending rescan covers a burst
	cancel  context.CancelFunc
	done    chan struct{}
}

var (
	_ loader.StateStore    = (*Store)(nil)
	_ loader.StateNotifier = (*Store)(nil)
)

// NewStore loads the decisions under prefix and watches them until Close.
// The client stays the caller's.
func NewStore(cli *clientv3.Client, prefix string, logger hclog.Logger) (*Store, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		cli: cli, prefix: strings.TrimSuffix(prefix, "/") + "/state/", log: logger,
		changes: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
	}
	rev, err := s.load(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	go s.watch(ctx, rev)
	return s, nil
}

// Get returns skill's decisions, as last seen from etcd.
func (s *Store) Get(skill string) (disabled bool, pin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.decisions[skill]
	return d.Disabled, d.Pin
}

// Decisions returns a copy of every skill's decisions.
func (s *Store) Decisions() map[string]loader.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]loader.Decision, len(s.decisions))
	for k, v := range s.decisions {
		out[k] = v
	}
	return out
}

// Changes receives a value after decisions changed in etcd by someone else
// (another host, another operator); the loader rescans on it.
func (s *Store) Changes() <-chan struct{} { return s.changes }

// Update applies fn to skill's decisions in etcd with compare-and-swap (see
// Store). When it returns nil the decision is stored and Get already shows
// it; on error nothing was written. A decision that becomes the zero value
// deletes the key.
func (s *Store) Update(skill string, fn func(*loader.Decision)) error {
	key := s.prefix + skill
	for range updateAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			cancel()
			return fmt.Errorf("read %s from etcd: %w", key, err)
		}
		var cur loader.Decision
		var modRev int64 // 0 compares as "the key does not exist"
		if len(resp.Kvs) == 1 {
			modRev = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
				// A value that is not a decision is replaced by fn's
				// result on the zero value rather than blocking every
				// decision on the skill; the log keeps what was there.
				s.log.Warn("replacing a value in etcd that is not a decision", "key", key, "error", err)
				cur = loader.Decision{}
			}
		}
		next := cur
		fn(&next)
		op := clientv3.OpDelete(key)
		if next != (loader.Decision{}) {
			b, err := json.Marshal(next)
			if err != nil {
				cancel()
				return fmt.Errorf("encode decision: %w", err)
			}
			op = clientv3.OpPut(key, string(b))
		}
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).Then(op).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("write %s to etcd: %w", key, err)
		}
		if tr.Succeeded {
			s.set(skill, next, tr.Header.Revision)
			return nil
		}
		s.log.Debug("decision changed while it was updated; applying it again", "skill", skill)
	}
	return fmt.Errorf("update %s: %w: %d attempts each lost to another writer", skill, ErrConflict, updateAttempts)
}

// Close stops the watch. The client stays open.
func (s *Store) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// set records d as skill's decision at rev, unless a newer one is known,
// and reports whether anything changed.
func (s *Store) set(skill string, d loader.Decision, rev int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.revs[skill] {
		return false
	}
	s.revs[skill] = rev
	if s.decisions[skill] == d {
		return false
	}
	if d == (loader.Decision{}) {
		delete(s.decisions, skill)
	} else {
		s.decisions[skill] = d
	}
	return true
}

// load reads every decision and returns the revision it read at. The
// result replaces what the store held, so a reload after a lost watch
// forgets decisions deleted in the meantime.
func (s *Store) load(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read decisions under %s from etcd: %w", s.prefix, err)
	}
	decisions := map[string]loader.Decision{}
	revs := map[string]int64{}
	for _, kv := range resp.Kvs {
		skill := strings.TrimPrefix(string(kv.Key), s.prefix)
		var d loader.Decision
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			s.log.Warn("ignoring a value in etcd that is not a decision", "key", string(kv.Key), "error", err)
			continue
		}
		decisions[skill] = d
		revs[skill] = kv.ModRevision
	}
	s.mu.Lock()
	changed := len(decisions) != len(s.decisions)
	for k, v := range decisions {
		if s.decisions[k] != v {
			changed = true
		}
	}
	s.decisions, s.revs = decisions, revs
	s.mu.Unlock()
	if changed {
		s.notify()
	}
	return resp.Header.Revision, nil
}

func (s *Store) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// watch follows the decisions from rev+1. When the watch breaks (etcd
// compacted past it, the connection was lost for good) it reloads
// everything and watches again from there, with a capped backoff.
func (s *Store) watch(ctx context.Context, rev int64) {
	defer close(s.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), s.prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("watch of operator decisions broke; reloading them", "error", err)
				}
				break
			}
			backoff = 100 * time.Millisecond
			changed := false
			for _, ev := range wr.Events {
				skill := strings.TrimPrefix(string(ev.Kv.Key), s.prefix)
				var d loader.Decision
				if ev.Type == clientv3.EventTypePut {
					if err := json.Unmarshal(ev.Kv.Value, &d); err != nil {
						s.log.Warn("ignoring a value in etcd that is not a decision", "key", string(ev.Kv.Key), "error", err)
						continue
					}
				}
				if s.set(skill, d, ev.Kv.ModRevision) {
					changed = true
				}
			}
			rev = max(rev, wr.Header.Revision)
			if changed {
				s.notify()
			}
		}
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			r, err := s.load(ctx)
			if err == nil {
				rev = r
				break
			}
			s.log.Warn("cannot reload operator decisions from etcd; retrying", "error", err, "in", backoff)
		}
	}
}
