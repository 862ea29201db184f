package loader

import (
	"context"

	"github.com/skillhost/skillhost/pkg/registry"
)

// runtimeProc is one running version under a runtime other than go-plugin:
// what an instance needs from the process while it keeps, for every runtime
// alike, the leases and drain, the exit watch that drives restart with
// backoff, the registry swap and the status. The go-plugin runtime is the
// instance's own fields (instance.go); an instance with a runtimeProc routes
// these calls to it instead. Its methods are safe for concurrent use.
type runtimeProc interface {
	// Tools is the tool set of the last describe, as the registry takes it.
	Tools() []registry.ToolSpec
	// Describe asks the process for its tools again, after it said they
	// changed; Tools returns the new set afterwards.
	Describe(ctx context.Context) ([]registry.ToolSpec, error)
	// Invoke has registry.Backend's contract. The instance holds the lease.
	Invoke(ctx context.Context, tool string, args []byte, maxResponse int64) ([]byte, error)
	// PID is the process id, which leads the process's own group.
	PID() int
	// Exited is closed once the process is gone, asked to or not; ExitErr
	// then says how it ended.
	Exited() <-chan struct{}
	ExitErr() error
	// Close stops the process (gracefully, with a bounded wait, then by
	// force), waits for it, and removes what it ran from. Safe to repeat.
	Close()
	// toolsChanged reports, once, that the process said its tools changed
	// since the last describe.
	toolsChanged() bool
}

// watchRuntime is the runtime's exit watch, as watchExit is go-plugin's:
// an exit nobody asked for is a crash, told to onExit before exited closes.
// It runs until the process is gone; kill waits for it (threadDone).
func (inst *instance) watchRuntime(threadDone chan struct{}) {
	defer close(threadDone)
	<-inst.rt.Exited()
	if err := inst.rt.ExitErr(); err != nil {
		status := err.Error()
		inst.log.exit.Store(&status) // for the crash's reason, as go-plugin's log gives it
	}
	if !inst.stopping.Load() && inst.onExit != nil {
		inst.onExit(inst)
	}
	inst.sweeper.Trigger()
	close(inst.exited)
}

// killRuntime is kill for a runtimeProc: stop it (the drain is over by
// now), tell the watchdogs, and wait for the exit watch. releaseBin, when
// set, runs after a deliberate stop only: after a crash what the process ran
// from is kept for its restart.
func (inst *instance) killRuntime() {
	crashed := !inst.stopping.Swap(true)
	inst.rt.Close()
	inst.reaper.Untrack(inst.pid)
	<-inst.threadDone
	inst.sweeper.Forget(inst.pid) // waited for by the runtime: the pid is free
	if !crashed && inst.releaseBin != nil {
		inst.releaseBin()
	}
}

// runtimeToolNames is toolNames for a runtimeProc.
func (inst *instance) runtimeToolNames() []string {
	tools := inst.rt.Tools()
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = registry.Qualified(inst.skill, t.Name)
	}
	return out
}

// redescribe takes the active instance's new tool set into the registry
// after its process said the set changed (MCP's list_changed). It runs on
// the supervisor's run loop, so it never races a swap: a set that a
// replaced instance announces is never put back.
func (s *supervisor) redescribe(ctx context.Context) {
	s.mu.Lock()
	inst := s.active
	s.mu.Unlock()
	if inst == nil || inst.rt == nil || !inst.rt.toolsChanged() {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, s.l.cfg.StartTimeout)
	defer cancel()
	if _, err := inst.rt.Describe(dctx); err != nil {
		inst.log.Warn("cannot list the tools again after the server said they changed; the old set serves", "error", err)
		return
	}
	select {
	case <-inst.exited:
		return // crashed meanwhile: its tools stay unavailable until the restart
	default:
	}
	if err := s.l.put(inst); err != nil {
		inst.log.Warn("the changed tool set was refused; the old set serves", "error", err)
		return
	}
	s.l.emit(Event{Skill: s.name, Version: inst.version, PID: inst.pid, From: StateActive, State: StateActive,
		Reason: "the server's tool list changed"})
}

// kickRedescribe asks the run loop for a redescribe. It never blocks: it
// may be called from a connection's reader.
func (s *supervisor) kickRedescribe() {
	select {
	case s.retool <- struct{}{}:
	default:
	}
}
