package fleet

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"oras.land/oras-go/v2/registry/remote"
)

// ArtifactStatus is what a host did with a skill's desired artifact.
type ArtifactStatus struct {
	Version string `json:"version"`
	Digest  string `json:"digest"`
	// Installed is true once the verified folder is in the tree.
	Installed bool `json:"installed"`
	// Error says why it was refused (tampered, partial, not a skill) or
	// could not be fetched; the version that served keeps serving.
	Error string `json:"error,omitempty"`
}

// PullerConfig configures StartPuller.
type PullerConfig struct {
	Client      *clientv3.Client
	Prefix      string
	Repo        *remote.Repository
	Skills      string // the tree to install into
	StrictModes bool
	// OnChange is called after the status changed (for the host record).
	OnChange func()
	// OnInstall is called after a version folder was renamed into the
	// tree, so a loader that does not watch the tree rescans it.
	OnInstall func(skill, version string)
	// Health reports whether this host serves skill at version, or why
	// that version failed. With it, swaps are a rollout (rollout.go):
	// MaxParallel hosts at a time (default 1), each holding its slot
	// until the version served for Settle (DefaultSettle), within
	// RolloutTimeout (DefaultRolloutTimeout). Without it a host swaps as
	// soon as it has the artifact.
	Health         func(skill, version string) (serving bool, failure string)
	MaxParallel    int
	Settle         time.Duration
	RolloutTimeout time.Duration
	// HostID names this host in a rollback's reason.
	HostID string
	Logger hclog.Logger
}

// Puller makes a host's tree hold every skill's desired artifact: it
// watches <prefix>/desired/, pulls each new digest, verifies it and
// unpacks it into the tree, where the loader's hot reload takes over.
type Puller struct {
	cfg    PullerConfig
	mu     sync.Mutex // guards status
	status map[string]ArtifactStatus
	cancel context.CancelFunc
	done   chan struct{}
	sess   *concurrency.Session // for the rollout slots; used by run's goroutine only
}

// markerName is the file beside a skill's version folders that records the
// digest a version was installed from, so a restarted host does not pull
// again what it has. The scanner ignores dot files.
func markerName(skills, skill, version string) string {
	return filepath.Join(skills, skill, "."+version+".digest")
}

// StartPuller reads the desired artifacts, installs what is missing in the
// background, and follows changes until Close.
func StartPuller(cfg PullerConfig) (*Puller, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.OnChange == nil {
		cfg.OnChange = func() {}
	}
	if cfg.OnInstall == nil {
		cfg.OnInstall = func(string, string) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Puller{cfg: cfg, status: map[string]ArtifactStatus{}, cancel: cancel, done: make(chan struct{})}
	go p.run(ctx)
	return p, nil
}

// Status is a copy of what the host did per skill.
func (p *Puller) Status() map[string]ArtifactStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.status)
}

// Close stops following; an install in progress finishes or is abandoned
// in staging, never half in the tree.
func (p *Puller) Close() error {
	p.cancel()
	<-p.done
	return nil
}

func (p *Puller) run(ctx context.Context) {
	defer close(p.done)
	defer func() {
		if p.sess != nil {
			// Not sess.Close: its context is the one just cancelled.
			p.sess.Orphan()
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			p.cfg.Client.Revoke(ctx, p.sess.Lease())
		}
	}()
	pfx := desiredPrefix(p.cfg.Prefix)
	retry := time.NewTicker(30 * time.Second) // fetch errors (registry away) heal; refusals are retried too, cheaply
	defer retry.Stop()
	for ctx.Err() == nil {
		resp, err := p.cfg.Client.Get(ctx, pfx, clientv3.WithPrefix())
		if err != nil {
			p.cfg.Logger.Warn("cannot read desired artifacts; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		desired := map[string]Desired{}
		for _, kv := range resp.Kvs {
			var d Desired
			if json.Unmarshal(kv.Value, &d) == nil {
				desired[strings.TrimPrefix(string(kv.Key), pfx)] = d
			}
		}
		for skill, d := range desired {
			p.apply(ctx, skill, d)
		}
		wch := p.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	follow:
		for {
			select {
			case <-ctx.Done():
				return
			case <-retry.C:
				for skill, st := range p.Status() {
					if st.Error != "" {
						p.apply(ctx, skill, Desired{Version: st.Version, Digest: st.Digest})
					}
				}
			case wr, ok := <-wch:
				if !ok || wr.Err() != nil {
					break follow // read everything again, then watch from there
				}
				for _, ev := range wr.Events {
					var d Desired
					if ev.Type != clientv3.EventTypePut || json.Unmarshal(ev.Kv.Value, &d) != nil {
						continue
					}
					p.apply(ctx, strings.TrimPrefix(string(ev.Kv.Key), pfx), d)
				}
			}
		}
	}
}

// apply installs d for skill unless the tree already has it: fetch and
// verify (at once), then, in a rollout slot, swap and settle.
func (p *Puller) apply(ctx context.Context, skill string, d Desired) {
	if d.Digest == "" {
		return // rolled back with nothing to go back to
	}
	if b, err := os.ReadFile(markerName(p.cfg.Skills, skill, d.Version)); err == nil && string(b) == d.Digest {
		if _, err := os.Stat(filepath.Join(p.cfg.Skills, skill, d.Version)); err == nil {
			if p.pruneNewer(skill, d.Version) {
				p.cfg.OnInstall(skill, d.Version)
			}
			p.set(skill, ArtifactStatus{Version: d.Version, Digest: d.Digest, Installed: true})
			return
		}
	}
	refuse := func(err error) {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("refused a skill artifact; the serving version keeps serving", "skill", skill, "version", d.Version, "digest", d.Digest, "error", err)
			p.set(skill, ArtifactStatus{Version: d.Version, Digest: d.Digest, Error: err.Error()})
		}
	}
	layer, err := Fetch(ctx, p.cfg.Repo, d.Digest)
	if err != nil {
		refuse(err)
		return
	}
	if p.cfg.Health != nil {
		release, err := p.acquire(ctx, skill)
		if err != nil {
			refuse(err)
			return
		}
		defer release()
		// The wait for a slot may have been long: if the fleet wants
		// something else by now (a rollback, a newer push), the watch
		// brings it; do not swap to this one.
		if cur, ok := p.desired(ctx, skill); !ok || cur.Digest != d.Digest {
			return
		}
	}
	if err := Unpack(layer, p.cfg.Skills, skill, d.Version, p.cfg.StrictModes); err != nil {
		refuse(err)
		return
	}
	if err := os.WriteFile(markerName(p.cfg.Skills, skill, d.Version), []byte(d.Digest), 0o644); err != nil {
		p.cfg.Logger.Warn("cannot record the installed digest; it will be pulled again at restart", "error", err)
	}
	p.pruneNewer(skill, d.Version)
	p.cfg.Logger.Info("installed a skill artifact", "skill", skill, "version", d.Version, "digest", d.Digest)
	p.cfg.OnInstall(skill, d.Version)
	if p.cfg.Health != nil {
		if why := p.settle(ctx, skill, d.Version); why != "" {
			p.rollBack(ctx, skill, d, why)
			return
		}
	}
	p.set(skill, ArtifactStatus{Version: d.Version, Digest: d.Digest, Installed: true})
}

func (p *Puller) set(skill string, st ArtifactStatus) {
	p.mu.Lock()
	changed := p.status[skill] != st
	p.status[skill] = st
	p.mu.Unlock()
	if changed {
		p.cfg.OnChange()
	}
}

// desired reads skill's desired artifact now.
func (p *Puller) desired(ctx context.Context, skill string) (Desired, bool) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := p.cfg.Client.Get(ctx, desiredPrefix(p.cfg.Prefix)+skill)
	if err != nil || len(resp.Kvs) != 1 {
		return Desired{}, false
	}
	var d Desired
	if json.Unmarshal(resp.Kvs[0].Value, &d) != nil {
		return Desired{}, false
	}
	return d, true
}
