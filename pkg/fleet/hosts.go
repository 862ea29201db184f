package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/skillhost/skillhost/pkg/loader"
)

// DefaultLeaseTTL is how long a host's record outlives the host: a host
// that dies without deregistering leaves the fleet this long after its last
// keep-alive. Five seconds is etcd's minimum sensible lease (the client
// renews at a third of it) and short enough for an operator watching a
// rollout.
const DefaultLeaseTTL = 5 * time.Second

// HostRecord is what a host says of itself, under its lease.
type HostRecord struct {
	ID      string        `json:"id"`
	Address string        `json:"address,omitempty"`
	Ready   bool          `json:"ready"`
	Skills  []SkillRecord `json:"skills"`
	// Artifacts is what the host did with each skill's desired artifact
	// (with --artifacts): installed, or refused and why.
	Artifacts map[string]ArtifactStatus `json:"artifacts,omitempty"`
	Updated   time.Time                 `json:"updated"`
}

// SkillRecord is what a host serves of one skill. Digest is the sha256 of
// the serving entrypoint, as its manifest states it (the loader checked it
// before launch), so hosts serving the same build show the same digest.
type SkillRecord struct {
	Skill     string `json:"skill"`
	Version   string `json:"version,omitempty"`
	Digest    string `json:"digest,omitempty"`
	State     string `json:"state"`
	LastError string `json:"last_error,omitempty"`
}

// RegistrarConfig configures Register.
type RegistrarConfig struct {
	Client *clientv3.Client
	Prefix string
	// Report says what the host is now; it is called after each Trigger
	// and must be cheap and safe to call from another goroutine.
	Report func() HostRecord
	// TTL of the lease (default DefaultLeaseTTL, at least 1 s).
	TTL    time.Duration
	Logger hclog.Logger
}

// Registrar keeps one host's record in etcd under a lease: written at
// Register, rewritten when Trigger finds it changed, and gone when the host
// closes it (lease revoked) or dies (lease expires).
type Registrar struct {
	cfg     RegistrarConfig
	key     string
	trigger chan struct{} // capacity 1: bursts merge
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
	revoke  bool // set by Close before cancel: revoke the lease on the way out
}

// Register writes the host's record under a new lease and keeps it fresh
// until Close. The record's ID names the key, so it must be unique in the
// fleet.
func Register(cfg RegistrarConfig) (*Registrar, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	cfg.TTL = max(cfg.TTL, time.Second)
	rec := cfg.Report()
	if rec.ID == "" || strings.Contains(rec.ID, "/") {
		return nil, fmt.Errorf("fleet: host id %q must be non-empty and without a slash", rec.ID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registrar{
		cfg: cfg, key: hostsPrefix(cfg.Prefix) + rec.ID,
		trigger: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
	}
	sess, err := r.session(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	last, err := r.put(ctx, sess, rec)
	if err != nil {
		sess.Orphan()
		cancel()
		return nil, err
	}
	go r.run(ctx, sess, last)
	return r, nil
}

func hostsPrefix(prefix string) string { return strings.TrimSuffix(prefix, "/") + "/hosts/" }

func (r *Registrar) session(ctx context.Context) (*concurrency.Session, error) {
	s, err := concurrency.NewSession(r.cfg.Client, concurrency.WithTTL(int(r.cfg.TTL/time.Second)), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("fleet: lease for %s: %w", r.key, err)
	}
	return s, nil
}

// put writes rec under the session's lease and returns what it wrote.
func (r *Registrar) put(ctx context.Context, sess *concurrency.Session, rec HostRecord) ([]byte, error) {
	rec.Updated = time.Now().UTC().Truncate(time.Millisecond)
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := r.cfg.Client.Put(ctx, r.key, string(b), clientv3.WithLease(sess.Lease())); err != nil {
		return nil, fmt.Errorf("fleet: register %s: %w", r.key, err)
	}
	return b, nil
}

// Trigger asks for the record to be compared with Report and rewritten if
// it changed. It never blocks.
func (r *Registrar) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// same reports whether two encoded records differ only in Updated.
func same(a []byte, rec HostRecord) bool {
	var old HostRecord
	if json.Unmarshal(a, &old) != nil {
		return false
	}
	old.Updated, rec.Updated = time.Time{}, time.Time{}
	x, _ := json.Marshal(old)
	y, _ := json.Marshal(rec)
	return bytes.Equal(x, y)
}

func (r *Registrar) run(ctx context.Context, sess *concurrency.Session, last []byte) {
	defer close(r.done)
	defer func() {
		sess.Orphan() // stop the keep-alive; the lease now expires by itself, as a dead host's would
		if r.revoke {
			// Revoked, the record goes at once. Not sess.Close: its
			// context is the one just cancelled.
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			if _, err := r.cfg.Client.Revoke(ctx, sess.Lease()); err != nil {
				r.cfg.Logger.Warn("cannot revoke this host's lease; its record goes when the lease expires", "error", err, "ttl", r.cfg.TTL)
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sess.Done():
			// The lease is gone (etcd unreachable longer than the TTL, or
			// revoked by an operator): register again under a new one.
			r.cfg.Logger.Warn("fleet lease lost; registering again", "key", r.key)
			for ctx.Err() == nil {
				s, err := r.session(ctx)
				if err == nil {
					if last, err = r.put(ctx, s, r.cfg.Report()); err == nil {
						sess = s
						break
					}
					s.Orphan()
				}
				r.cfg.Logger.Warn("cannot register in the fleet; retrying", "error", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		case <-r.trigger:
			rec := r.cfg.Report()
			if same(last, rec) {
				continue
			}
			b, err := r.put(ctx, sess, rec)
			if err != nil {
				if ctx.Err() == nil {
					r.cfg.Logger.Warn("cannot update this host's fleet record", "error", err)
				}
				continue
			}
			last = b
		}
	}
}

// Close deregisters the host (revokes its lease) and stops. Safe to call
// twice.
func (r *Registrar) Close() error {
	r.once.Do(func() {
		r.revoke = true
		r.cancel()
		<-r.done
	})
	return nil
}

// Abandon stops keeping the lease alive without revoking it, as if the
// host had died: the record leaves the fleet when the lease expires. For
// tests and for a host that must not be seen leaving early.
func (r *Registrar) Abandon() {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
}

// View is the fleet as etcd holds it at one revision.
type View struct {
	Revision int64                      `json:"revision"`
	Hosts    []HostRecord               `json:"hosts"`
	Skills   map[string]SkillView       `json:"skills"`
	State    map[string]loader.Decision `json:"state,omitempty"`
	// Desired is each skill's desired artifact (host push), with the
	// reason when a failed rollout set it back.
	Desired map[string]Desired `json:"desired,omitempty"`
}

// SkillView is, for one skill, which hosts serve which build (version and
// digest); one entry means the fleet agrees.
type SkillView struct {
	Digests []DigestView `json:"digests"`
}

// DigestView is one build of a skill and the hosts serving it.
type DigestView struct {
	Digest  string   `json:"digest"`
	Version string   `json:"version"`
	Hosts   []string `json:"hosts"`
}

// ReadView reads every host and decision at one revision.
func ReadView(ctx context.Context, cli *clientv3.Client, prefix string) (View, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, strings.TrimSuffix(prefix, "/")+"/", clientv3.WithPrefix())
	if err != nil {
		return View{}, fmt.Errorf("fleet: read %s: %w", prefix, err)
	}
	v := View{Revision: resp.Header.Revision, Hosts: []HostRecord{}, Skills: map[string]SkillView{}, State: map[string]loader.Decision{}, Desired: map[string]Desired{}}
	hp, sp, dp := hostsPrefix(prefix), strings.TrimSuffix(prefix, "/")+"/state/", desiredPrefix(prefix)
	for _, kv := range resp.Kvs {
		k := string(kv.Key)
		switch {
		case strings.HasPrefix(k, hp):
			var h HostRecord
			if json.Unmarshal(kv.Value, &h) == nil {
				v.Hosts = append(v.Hosts, h)
			}
		case strings.HasPrefix(k, sp):
			var d loader.Decision
			if json.Unmarshal(kv.Value, &d) == nil {
				v.State[strings.TrimPrefix(k, sp)] = d
			}
		case strings.HasPrefix(k, dp):
			var d Desired
			if json.Unmarshal(kv.Value, &d) == nil {
				v.Desired[strings.TrimPrefix(k, dp)] = d
			}
		}
	}
	sort.Slice(v.Hosts, func(i, j int) bool { return v.Hosts[i].ID < v.Hosts[j].ID })
	for _, h := range v.Hosts {
		for _, s := range h.Skills {
			if s.Version == "" {
				continue
			}
			// One build is a version and a digest: two versions may share
			// a binary, and a version rebuilt in place has a new digest.
			sv := v.Skills[s.Skill]
			less := func(d DigestView) bool { return d.Version < s.Version || d.Version == s.Version && d.Digest < s.Digest }
			i := sort.Search(len(sv.Digests), func(i int) bool { return !less(sv.Digests[i]) })
			if i == len(sv.Digests) || sv.Digests[i].Digest != s.Digest || sv.Digests[i].Version != s.Version {
				sv.Digests = append(sv.Digests[:i], append([]DigestView{{Digest: s.Digest, Version: s.Version}}, sv.Digests[i:]...)...)
			}
			sv.Digests[i].Hosts = append(sv.Digests[i].Hosts, h.ID)
			v.Skills[s.Skill] = sv
		}
	}
	return v, nil
}
