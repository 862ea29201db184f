package host

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/agent"
	"github.com/skillhost/skillhost/pkg/team"
)

// TeamsConfig is the agent teams face (pkg/team): a lead and teammates
// with durable inboxes and a task board, under StateDir/teams, with the
// profiles and model of Config.Agent.
type TeamsConfig struct {
	// Workers bounds how many members run a turn at once (4 when 0): an
	// idle member holds no goroutine.
	Workers int
}

var (
	_ Starter = (*teamsFace)(nil)
	_ Drainer = (*teamsFace)(nil)
)

// teamsFace serves /v1/teams and runs the members' loops. The teams on
// disk are loaded, and members with unread mail resume, once the first
// scan has settled, so that their tools are there.
type teamsFace struct {
	cfg      TeamsConfig
	agent    *AgentConfig
	stateDir string

	m      *Mount
	store  *team.Store
	driver *team.Driver
	api    *team.API

	stop context.CancelFunc // ends the driver
	bg   sync.WaitGroup
}

func (f *teamsFace) Name() string { return "teams" }

func (f *teamsFace) Mount(m *Mount) error {
	if f.stateDir == "" {
		return errors.New("teams live under the state folder: set Config.StateDir")
	}
	f.m = m
	ac := AgentConfig{}
	if f.agent != nil {
		ac = *f.agent
	}
	profiles := ac.Profiles
	if profiles == nil {
		profiles = agent.DefaultProfiles()
	}
	client, err := chatClient(ac, profiles)
	if err != nil {
		return err
	}
	var model team.Model
	if client != nil {
		model = client
	}
	// The team package reports only repairs and failures, as warnings.
	logger := slog.New(slog.NewTextHandler(m.Logger.Named("teams").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}), nil))
	if f.store, err = team.Open(team.Config{Dir: f.stateDir, Logger: logger}); err != nil {
		mountUnavailable(m, "teams", team.CodeTeamsClosed, err, "/v1/teams")
		return nil
	}
	f.driver, err = team.NewDriver(team.DriverConfig{Store: f.store, Registry: m.Registry, Profiles: profiles,
		Model: model, DefaultModel: ac.Model, Workers: f.cfg.Workers, Logger: logger})
	if err != nil {
		f.store.Close()
		return err
	}
	f.api = team.NewAPI(f.store)
	f.api.Mount(m.Handle)
	m.Logger.Info("teams ready", "model", model != nil)
	return nil
}

// Start runs the driver once the skills are loaded; it loads the teams on
// disk and resumes the members with unread mail.
func (f *teamsFace) Start() error {
	if f.driver == nil { // unavailable: see mountUnavailable
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.stop = cancel
	f.bg.Go(func() {
		select {
		case <-f.m.Ready:
		case <-ctx.Done():
			return
		}
		if err := f.driver.Run(ctx); err != nil {
			f.m.Logger.Error("team driver stopped", "error", err)
		}
	})
	return nil
}

// Drain ends the teams' event streams.
func (f *teamsFace) Drain() {
	if f.api != nil {
		f.api.Drain()
	}
}

// Close stops the driver (turns in flight are cancelled; their logs let
// the next start go on) and closes the teams' files.
func (f *teamsFace) Close() error {
	if f.stop != nil {
		f.stop()
	}
	f.bg.Wait()
	if f.store == nil {
		return nil
	}
	return f.store.Close()
}

// chatClient is the model client of the agent config, or nil when neither
// it nor a profile names a model.
func chatClient(ac AgentConfig, ps *agent.Profiles) (*agent.ChatClient, error) {
	if !needsModel(ac, ps) {
		return nil, nil
	}
	base := ac.BaseURL
	if base == "" {
		base = agent.DefaultBaseURL
	}
	return agent.NewChatClient(base, ac.APIKey, nil, agent.RetryPolicy{})
}
