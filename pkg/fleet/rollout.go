package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Rollout defaults: one host swaps at a time, and the next starts once
// this one has served the new version for 3 s without a failure; a
// version that does not serve within a minute has failed.
const (
	DefaultSettle         = 3 * time.Second
	DefaultRolloutTimeout = time.Minute
)

// A rollout is every host's puller taking its turn: a host downloads and
// verifies the artifact whenever it likes, but swaps only while it holds
// one of MaxParallel slots (etcd mutexes under <prefix>/rollout/<skill>/,
// on a session whose lease frees the slot if the host dies). It holds the
// slot until the new version has served healthily for Settle, so the next
// host starts only then. If the version fails here (it does not start, or
// crashes while settling), the host takes it out of its tree and sets the
// skill's desired version back to the previous digest, with the reason;
// every host follows that like any push.

// acquire takes one of the skill's rollout slots, waiting for one to free.
func (p *Puller) acquire(ctx context.Context, skill string) (release func(), err error) {
	n := max(p.cfg.MaxParallel, 1)
	for {
		sess, err := p.session(ctx)
		if err != nil {
			return nil, err
		}
		for i := range n {
			m := concurrency.NewMutex(sess, fmt.Sprintf("%s/rollout/%s/%d", strings.TrimSuffix(p.cfg.Prefix, "/"), skill, i))
			err := m.TryLock(ctx)
			if err == nil {
				return func() {
					ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
					defer cancel()
					m.Unlock(ctx)
				}, nil
			}
			if err != concurrency.ErrLocked {
				return nil, fmt.Errorf("rollout slot: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// session is the puller's etcd session, made again if its lease was lost.
func (p *Puller) session(ctx context.Context) (*concurrency.Session, error) {
	if p.sess != nil {
		select {
		case <-p.sess.Done():
			p.sess = nil
		default:
			return p.sess, nil
		}
	}
	s, err := concurrency.NewSession(p.cfg.Client, concurrency.WithTTL(int(DefaultLeaseTTL/time.Second)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("rollout session: %w", err)
	}
	p.sess = s
	return s, nil
}

// settle waits until the host serves version healthily for Settle, and
// returns "" then, or why it did not.
func (p *Puller) settle(ctx context.Context, skill, version string) string {
	settle, timeout := p.cfg.Settle, p.cfg.RolloutTimeout
	if settle <= 0 {
		settle = DefaultSettle
	}
	if timeout <= 0 {
		timeout = DefaultRolloutTimeout
	}
	deadline := time.Now().Add(timeout)
	var since time.Time
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		serving, failure := p.cfg.Health(skill, version)
		switch {
		case failure != "":
			return failure
		case !serving:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= settle:
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("did not serve healthily for %v within %v", settle, timeout)
		}
		select {
		case <-ctx.Done():
			return "" // stopping: no verdict, no rollback
		case <-tick.C:
		}
	}
}

// rollBack takes the failed version out of this host's tree and, if the
// fleet still wants it, sets the skill's desired version back to the one
// before, with the reason, in one compare-and-swap.
func (p *Puller) rollBack(ctx context.Context, skill string, d Desired, why string) {
	os.RemoveAll(filepath.Join(p.cfg.Skills, skill, d.Version))
	os.Remove(markerName(p.cfg.Skills, skill, d.Version))
	p.cfg.OnInstall(skill, d.Version)
	reason := fmt.Sprintf("%s (%s) failed on host %s: %s", d.Version, d.Digest, p.cfg.HostID, why)
	p.cfg.Logger.Warn("rolling the fleet back", "skill", skill, "reason", reason)
	p.set(skill, ArtifactStatus{Version: d.Version, Digest: d.Digest, Error: "rolled back: " + reason})

	back := Desired{RolledBack: reason, Pushed: time.Now().UTC()}
	if d.Previous != nil {
		back.Version, back.Digest = d.Previous.Version, d.Previous.Digest
	}
	b, _ := json.Marshal(back)
	key := desiredPrefix(p.cfg.Prefix) + skill
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := p.cfg.Client.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		return
	}
	var cur Desired
	if json.Unmarshal(resp.Kvs[0].Value, &cur) != nil || cur.Digest != d.Digest {
		return // the fleet wants something else already
	}
	if _, err := p.cfg.Client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, string(b))).Commit(); err != nil {
		p.cfg.Logger.Warn("cannot roll the fleet back", "skill", skill, "error", err)
	}
}

// pruneNewer takes out of the tree the versions of skill newer than
// version that an artifact installed (a rollback's way back: the newest
// valid version is the one that serves).
func (p *Puller) pruneNewer(skill, version string) bool {
	want, err := semver.StrictNewVersion(version)
	if err != nil {
		return false
	}
	markers, _ := filepath.Glob(filepath.Join(p.cfg.Skills, skill, ".*.digest"))
	pruned := false
	for _, m := range markers {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "."), ".digest")
		if sv, err := semver.StrictNewVersion(v); err == nil && sv.GreaterThan(want) {
			os.RemoveAll(filepath.Join(p.cfg.Skills, skill, v))
			os.Remove(m)
			pruned = true
		}
	}
	return pruned
}
