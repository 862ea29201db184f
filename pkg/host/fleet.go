package host

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skillhost/skillhost/pkg/fleet"
	"github.com/skillhost/skillhost/pkg/loader"
)

// FleetConfig turns on fleet mode: the operator's decisions live in etcd
// and every host follows them, and the host registers itself there under a
// lease. See docs/operations.md, "Running a fleet".
type FleetConfig struct {
	// Etcd says where the fleet's store is (fleet.ParseEtcdURL reads the
	// --state URL into it).
	Etcd fleet.EtcdConfig
	// ID names this host in the fleet. Default: hostname-port of the
	// listen address.
	ID string
	// Address is what others reach this host at. Default: the bound
	// listen address.
	Address string
	// LeaseTTL is how long a dead host stays listed (default
	// fleet.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// Artifacts, when set, is the OCI repository of the skills' versions:
	// the host installs every desired artifact (host push) into its tree.
	Artifacts *fleet.ArtifactsConfig
	// MaxParallel hosts swap to a pushed version at a time (default 1),
	// each once the one before served it healthily for Settle (default
	// fleet.DefaultSettle).
	MaxParallel int
	Settle      time.Duration
}

// fleetFace connects to etcd, keeps the decisions there (the loader's
// StateStore), registers the host, and serves GET /v1/fleet and
// /v1/fleet/events.
type fleetFace struct {
	cfg      FleetConfig
	cli      *clientv3.Client
	store    *fleet.Store
	handlers *fleet.Handlers
	skills   string // the tree, to read the serving digests and install artifacts
	strict   bool   // Config.StrictModes, for the artifacts' check
	puller   *fleet.Puller

	ld     *loader.Loader
	m      *Mount
	reg    *fleet.Registrar
	stop   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// openFleet connects and loads the decisions; the host needs them before
// its loader exists. addr is the bound listen address, if any.
func openFleet(cfg FleetConfig, skills string, strict bool, addr net.Addr, log hclog.Logger) (*fleetFace, error) {
	if cfg.Etcd.Prefix == "" {
		cfg.Etcd.Prefix = fleet.DefaultPrefix
	}
	if addr != nil {
		if cfg.Address == "" {
			cfg.Address = addr.String()
		}
		if cfg.ID == "" {
			name, _ := os.Hostname()
			_, port, _ := net.SplitHostPort(addr.String())
			cfg.ID = fmt.Sprintf("%s-%s", name, port)
		}
	}
	if cfg.ID == "" {
		return nil, fmt.Errorf("host: fleet: a host without a listen address needs an id")
	}
	cli, err := fleet.Dial(cfg.Etcd)
	if err != nil {
		return nil, fmt.Errorf("host: fleet: %w", err)
	}
	store, err := fleet.NewStore(cli, cfg.Etcd.Prefix, log)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("host: fleet: %w", err)
	}
	return &fleetFace{
		cfg: cfg, cli: cli, store: store, skills: skills, strict: strict,
		handlers: fleet.NewHandlers(cli, cfg.Etcd.Prefix), stop: make(chan struct{}),
	}, nil
}

// faces is the face list with f in it, for a nil f none.
func (f *fleetFace) faces() []Face {
	if f == nil {
		return nil
	}
	return []Face{f}
}

func (f *fleetFace) Name() string { return "fleet" }

func (f *fleetFace) Mount(m *Mount) error {
	f.m, f.ld = m, m.Skills
	m.Handle("GET /v1/fleet", http.HandlerFunc(f.handlers.View))
	m.Handle("GET /v1/fleet/events", http.HandlerFunc(f.handlers.Events))
	return nil
}

func (f *fleetFace) report() fleet.HostRecord {
	rec := fleet.HostRecord{
		ID: f.cfg.ID, Address: f.cfg.Address, Ready: f.ld.Ready(),
		Skills: fleet.Serving(f.skills, f.ld.Status()),
	}
	if f.puller != nil {
		rec.Artifacts = f.puller.Status()
	}
	return rec
}

// Start registers the host and keeps its record fresh: after every
// lifecycle or registry event, and once a second for what no event marks
// (readiness after the first scan). A record is rewritten only if it
// changed.
func (f *fleetFace) Start() error {
	r, err := fleet.Register(fleet.RegistrarConfig{
		Client: f.cli, Prefix: f.cfg.Etcd.Prefix, Report: f.report, TTL: f.cfg.LeaseTTL, Logger: f.m.Logger,
	})
	if err != nil {
		return err
	}
	f.reg = r
	if f.cfg.Artifacts != nil {
		repo, err := f.cfg.Artifacts.Open()
		if err != nil {
			return err
		}
		f.puller, err = fleet.StartPuller(fleet.PullerConfig{
			Client: f.cli, Prefix: f.cfg.Etcd.Prefix, Repo: repo, Skills: f.skills, StrictModes: f.strict,
			OnChange: r.Trigger, Logger: f.m.Logger, HostID: f.cfg.ID,
			Health: f.health, MaxParallel: f.cfg.MaxParallel, Settle: f.cfg.Settle,
			OnInstall: func(skill, version string) {
				if err := f.ld.Rescan(context.Background()); err != nil {
					f.m.Logger.Warn("rescan after installing an artifact failed", "skill", skill, "version", version, "error", err)
				}
			},
		})
		if err != nil {
			return err
		}
	}
	sub := f.m.Events.Subscribe(16)
	f.wg.Go(func() {
		defer sub.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-sub.C:
			case <-tick.C:
			}
			r.Trigger()
		}
	})
	f.m.Logger.Info("joined the fleet", "id", f.cfg.ID, "address", f.cfg.Address,
		"etcd", f.cfg.Etcd.Endpoints, "prefix", f.cfg.Etcd.Prefix)
	return nil
}

// health is the rollout's check: the host serves skill at version (its
// tools are in the registry and the version is active), or that version
// failed, and why.
func (f *fleetFace) health(skill, version string) (serving bool, failure string) {
	st, ok := f.ld.Skill(skill)
	if !ok {
		return false, ""
	}
	if st.Disabled || st.Pinned != "" && st.Pinned != version {
		// The operator holds the skill elsewhere: the version cannot
		// serve here, and that is no failure of the version.
		return true, ""
	}
	for _, v := range st.Versions {
		if v.Version != version {
			continue
		}
		switch v.State {
		case loader.StateActive:
			return st.Active == version, ""
		case loader.StateFailed, loader.StateInvalid, loader.StateCrashed:
			why := v.LastError
			if why == "" && len(v.Problems) > 0 {
				why = v.Problems.Error()
			}
			return false, fmt.Sprintf("%s: %s", v.State, why)
		}
	}
	return false, ""
}

func (f *fleetFace) Drain() { f.handlers.Drain() }

// Close leaves the fleet (revokes the lease) and disconnects. Safe to call
// twice.
func (f *fleetFace) Close() error {
	f.closed.Do(func() {
		close(f.stop)
		f.wg.Wait()
		if f.puller != nil {
			f.puller.Close()
		}
		if f.reg != nil {
			f.reg.Close()
		}
		f.handlers.Drain()
		f.store.Close()
		f.cli.Close()
	})
	return nil
}

// ParseFleetState reads the --state flag: "" or "local" is one host on its
// own (nil), etcd://host:port[,host:port]/prefix (etcds:// for TLS) is a
// fleet.
func ParseFleetState(state string) (*FleetConfig, error) {
	if state == "" || state == "local" {
		return nil, nil
	}
	ec, err := fleet.ParseEtcdURL(state)
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	return &FleetConfig{Etcd: ec}, nil
}

// FleetView is what GET /v1/fleet answers, for clients of the API.
type FleetView = fleet.View

// PushArtifact is `host push`: it packs a version folder as an OCI
// artifact in cfg.Artifacts and records its digest as the skill's desired
// version in the fleet's etcd, which every host then installs.
func PushArtifact(ctx context.Context, cfg FleetConfig, dir string) (version, digest string, err error) {
	if cfg.Artifacts == nil {
		return "", "", fmt.Errorf("push needs --artifacts oci://host/repository")
	}
	if cfg.Etcd.Prefix == "" {
		cfg.Etcd.Prefix = fleet.DefaultPrefix
	}
	repo, err := cfg.Artifacts.Open()
	if err != nil {
		return "", "", err
	}
	cli, err := fleet.Dial(cfg.Etcd)
	if err != nil {
		return "", "", err
	}
	defer cli.Close()
	d, err := fleet.Push(ctx, repo, cli, cfg.Etcd.Prefix, dir)
	return d.Version, d.Digest, err
}

// ParseArtifacts reads the --artifacts flag (oci://host/repository).
func ParseArtifacts(s string) (*fleet.ArtifactsConfig, error) {
	if s == "" {
		return nil, nil
	}
	c, err := fleet.ParseArtifactsURL(s)
	if err != nil {
		return nil, fmt.Errorf("--artifacts: %w", err)
	}
	return &c, nil
}
