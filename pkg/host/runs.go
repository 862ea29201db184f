package host

import (
	"errors"
	"fmt"
	"sync"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/flow"
	"github.com/skillhost/skillhost/pkg/runs"
)

// RunsConfig is the multi-agent runs face (pkg/flow): group chats and
// graph workflows over the agent profiles, logged under StateDir/runs.
type RunsConfig struct {
	// Flows is the folder of flow files (flow.DirBeside of the agents
	// file, as host serve has it). Empty or missing: no flows, and
	// POST /v1/runs says so.
	Flows string
}

// A Reloader is a Face with configuration of its own to re-read: Host.Rescan
// (SIGHUP) calls Reload after the skills' rescan. A failed reload must
// keep what was loaded before.
type Reloader interface{ Reload() error }

var (
	_ Starter  = (*runsFace)(nil)
	_ Drainer  = (*runsFace)(nil)
	_ Reloader = (*runsFace)(nil)
)

// runsFace serves /v1/runs and /v1/flows and drives the runs. Unfinished
// runs resume once the first scan has settled, so that their tools are
// there.
type runsFace struct {
	cfg      RunsConfig
	agent    *AgentConfig
	stateDir string

	m        *Mount
	profiles *agent.Profiles
	store    *runs.Store
	eng      *flow.Engine
	api      *flow.API

	quit chan struct{} // closed by Close: the resume waiting for ready gives up
	bg   sync.WaitGroup
}

func (f *runsFace) Name() string { return "runs" }

func (f *runsFace) Mount(m *Mount) error {
	if f.stateDir == "" {
		return errors.New("runs are logged under the state folder: set Config.StateDir")
	}
	f.m, f.quit = m, make(chan struct{})
	ac := AgentConfig{}
	if f.agent != nil {
		ac = *f.agent
	}
	f.profiles = ac.Profiles
	if f.profiles == nil {
		f.profiles = agent.DefaultProfiles()
	}
	set, err := flow.LoadDir(f.cfg.Flows, f.profiles)
	if err != nil {
		// The host serves without them rather than not at all: the
		// operator fixes the files and reloads (SIGHUP, POST /v1/flows/reload).
		m.Logger.Error("flows not loaded; fix them and reload", "flows_dir", f.cfg.Flows, "error", err)
		set = flow.NewSet()
	}
	var model flow.Model
	client, err := chatClient(ac, f.profiles)
	if err != nil {
		return err
	}
	if client != nil {
		model = client
	}
	if f.store, err = runs.Open(runs.Config{Dir: f.stateDir}); err != nil {
		mountUnavailable(m, "runs", flow.CodeRunsClosed, err, "/v1/runs", "/v1/flows")
		return nil
	}
	met := flow.NewMetrics()
	f.eng, err = flow.NewEngine(flow.EngineConfig{Store: f.store, Registry: m.Registry, Profiles: f.profiles, Model: model,
		DefaultModel: ac.Model, Flows: set, Logger: m.Logger, Observer: met})
	if err != nil {
		f.store.Close()
		return err
	}
	if err := m.Metrics.Register(met.Collectors()...); err != nil {
		f.eng.Close()
		f.store.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	f.api = flow.NewAPI(f.eng, f.Reload)
	f.api.Mount(m.Handle)
	m.Logger.Info("runs ready", "flows_dir", f.cfg.Flows, "flows", set.Names(), "model", model != nil)
	return nil
}

// needsModel reports whether the agent config or a profile names a model.
func needsModel(ac AgentConfig, ps *agent.Profiles) bool {
	if ac.Model != "" {
		return true
	}
	for _, n := range ps.Names() {
		if p, _ := ps.Get(n); p.Model != "" {
			return true
		}
	}
	return false
}

// Start resumes the unfinished runs once the skills are loaded.
func (f *runsFace) Start() error {
	if f.eng == nil { // unavailable: see mountUnavailable
		return nil
	}
	f.bg.Go(func() {
		select {
		case <-f.m.Ready:
		case <-f.quit:
			return
		}
		if err := f.eng.Resume(); err != nil {
			f.m.Logger.Warn("some runs could not be resumed", "error", err)
		}
	})
	return nil
}

// Reload re-reads the flows folder; on any problem the old flows stay.
func (f *runsFace) Reload() error {
	if f.eng == nil {
		return nil // unavailable: no flows to run them with
	}
	set, err := flow.LoadDir(f.cfg.Flows, f.profiles)
	if err != nil {
		f.m.Logger.Warn("flows not reloaded; the old ones stay", "flows_dir", f.cfg.Flows, "error", err)
		return err
	}
	f.eng.SetFlows(set)
	f.m.Logger.Info("flows reloaded", "flows_dir", f.cfg.Flows, "flows", set.Names())
	return nil
}

// Drain ends the runs' event streams.
func (f *runsFace) Drain() {
	if f.api != nil {
		f.api.Drain()
	}
}

// Close cancels the runs' calls in flight and closes their logs; the runs
// stay unfinished and resume at the next start.
func (f *runsFace) Close() error {
	close(f.quit)
	f.bg.Wait()
	if f.eng == nil {
		return nil
	}
	f.eng.Close()
	return f.store.Close()
}

// FlowsBeside is where the flows of an agents file live by default: the
// folder flows/ beside it (flow.DirBeside).
func FlowsBeside(agentsFile string) string { return flow.DirBeside(agentsFile) }
