package loader

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/proc"
)

// desired is what the tree and the operator ask of one skill.
type desired struct {
	versions []manifest.Version // every folder of the skill, as scanned
	disabled bool
	pin      string
}

// supervisor owns one skill's lifecycle. Its run goroutine is the only one
// that launches, swaps or restarts the skill; other goroutines talk to it
// through update (latest wins) and crashCh.
type supervisor struct {
	l    *Loader
	name string

	updateMu sync.Mutex // guards next and dones
	next     *desired
	dones    []chan struct{}
	wake     chan struct{} // capacity 1: merges bursts of updates
	crashCh  chan *instance
	retool   chan struct{} // capacity 1: the active instance's tools changed (runtime.go)

	restartTimer *time.Timer
	restartN     int

	// mu guards the fields below, which status reads. The run goroutine
	// holds it only to change them, never while launching or draining.
	mu         sync.Mutex
	cur        desired
	active     *instance
	starting   string
	crashed    *manifest.Version // serving version whose process died; restarting
	draining   map[*instance]struct{}
	failed     map[string]string // fingerprint -> why it failed
	incomplete map[string]string // fingerprint -> why the launch was abandoned
	restarts   map[string]int    // version -> restarts
	lastErr    map[string]string // version -> last error of any kind
	reason     string            // why nothing serves
}

func newSupervisor(l *Loader, name string) *supervisor {
	return &supervisor{
		l: l, name: name, wake: make(chan struct{}, 1), crashCh: make(chan *instance, 16), retool: make(chan struct{}, 1),
		draining: map[*instance]struct{}{}, failed: map[string]string{}, incomplete: map[string]string{},
		restarts: map[string]int{}, lastErr: map[string]string{},
	}
}

// update hands the supervisor a new desired state. The returned channel is
// closed once the supervisor has acted on it (or a later one).
func (s *supervisor) update(d desired) <-chan struct{} {
	done := make(chan struct{})
	s.updateMu.Lock()
	s.next = &d
	s.dones = append(s.dones, done)
	s.updateMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return done
}

func (s *supervisor) run(ctx context.Context) {
	for {
		var restartC <-chan time.Time
		if s.restartTimer != nil {
			restartC = s.restartTimer.C
		}
		select {
		case <-ctx.Done():
			s.shutdown()
			s.updateMu.Lock()
			for _, d := range s.dones {
				close(d)
			}
			s.dones = nil
			s.updateMu.Unlock()
			return
		case <-s.wake:
			s.updateMu.Lock()
			d, dones := s.next, s.dones
			s.next, s.dones = nil, nil
			s.updateMu.Unlock()
			if d != nil {
				s.reconcile(ctx, *d)
			}
			for _, c := range dones {
				close(c)
			}
			if s.leaveIfGone() {
				return
			}
		case inst := <-s.crashCh:
			s.onCrash(inst)
		case <-restartC:
			s.restartTimer = nil
			s.restart(ctx)
		case <-s.retool:
			s.redescribe(ctx)
		}
	}
}

// leaveIfGone ends a supervisor whose skill has no folder left and nothing
// running (no process serving, draining, starting or due a restart): it
// leaves the loader's list, so a deleted or renamed skill stops showing in
// the status and a supervisor per name ever seen does not pile up. A
// version that was draining when the folder went is seen through first:
// the check runs after every update, and the periodic rescan sends one.
// It holds supMu and then updateMu, as scanAndDispatch holds supMu while
// it hands out updates, so no update can reach a supervisor that left.
func (s *supervisor) leaveIfGone() bool {
	s.mu.Lock()
	idle := len(s.cur.versions) == 0 && s.active == nil && len(s.draining) == 0 && s.crashed == nil && s.starting == ""
	s.mu.Unlock()
	if !idle || s.restartTimer != nil {
		return false
	}
	s.l.supMu.Lock()
	defer s.l.supMu.Unlock()
	s.updateMu.Lock()
	defer s.updateMu.Unlock()
	if s.next != nil || s.l.sups[s.name] != s {
		return false
	}
	delete(s.l.sups, s.name)
	return true
}

// reconcile makes what serves match d: launch the target, swap it in, drain
// what it replaces. A target that fails is remembered and the next best one
// tried, so a broken new version never replaces a working one.
func (s *supervisor) reconcile(ctx context.Context, d desired) {
	s.mu.Lock()
	before := s.cur
	s.cur = d
	present := map[string]bool{}
	for _, v := range d.versions {
		present[v.Fingerprint] = true
	}
	for fp := range s.failed { // a changed file has a new fingerprint: forget the old verdict
		if !present[fp] {
			delete(s.failed, fp)
		}
	}
	s.incomplete = map[string]string{}
	s.mu.Unlock()
	s.announceVerdicts(before, d)

	for ctx.Err() == nil {
		target, reason := s.pickTarget(d)
		if target == nil {
			s.retire(reason)
			return
		}
		s.mu.Lock()
		same := (s.active != nil && s.active.ver.Fingerprint == target.Fingerprint) ||
			(s.crashed != nil && s.crashed.Fingerprint == target.Fingerprint)
		s.mu.Unlock()
		if same {
			return
		}
		if s.swapTo(ctx, *target, "new desired version", false) {
			return
		}
	}
}

// announceVerdicts emits an event for every version that the scan found
// invalid or incomplete and was not so, for the same reasons, before. Such a
// version is never launched, so without this nothing would tell a watcher
// (the console, host events) that a broken copy arrived.
func (s *supervisor) announceVerdicts(before, now desired) {
	was := map[string]string{}
	for _, v := range before.versions {
		was[v.Version] = string(v.Status) + "\x00" + v.Problems.Error()
	}
	for _, v := range now.versions {
		var state State
		switch v.Status {
		case manifest.StatusInvalid:
			state = StateInvalid
		case manifest.StatusIncomplete:
			state = StateIncomplete
		default:
			continue
		}
		if was[v.Version] != string(v.Status)+"\x00"+v.Problems.Error() {
			s.l.emit(Event{Skill: s.name, Version: v.Version, State: state, Reason: v.Problems.Error()})
		}
	}
}

// pickTarget returns the version that should serve, or nil and why none.
func (s *supervisor) pickTarget(d desired) (*manifest.Version, string) {
	if d.disabled {
		return nil, "disabled by an operator"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var valid []manifest.Version
	// The serving version's own folder being rewritten (cp over its binary, then its
	// manifest) looks incomplete until the copy ends. The instance runs from a private
	// copy and still works, so it keeps serving: retiring it, or falling back to an older
	// version, would fail calls for the length of a copy. A version that ranks above it
	// still takes over, so a folder left incomplete for good holds nothing back.
	var rewritten *manifest.Version
	for _, v := range d.versions {
		if v.Status == manifest.StatusValid {
			valid = append(valid, v)
		}
		if v.Status == manifest.StatusIncomplete && s.active != nil && v.Version == s.active.ver.Version &&
			(d.pin == "" || d.pin == v.Version) {
			keep := s.active.ver
			rewritten = &keep
		}
	}
	sort.SliceStable(valid, func(i, j int) bool { return ranksAbove(valid[i], valid[j]) })
	for i := range valid {
		v := &valid[i]
		if d.pin != "" && v.Version != d.pin {
			continue
		}
		if _, bad := s.failed[v.Fingerprint]; bad {
			continue
		}
		if _, bad := s.incomplete[v.Fingerprint]; bad {
			continue
		}
		if rewritten != nil && !ranksAbove(*v, *rewritten) {
			break
		}
		return v, ""
	}
	if rewritten != nil {
		return rewritten, ""
	}
	// Nothing better: keep what serves, if it is still on disk as it was.
	if s.active != nil {
		for i := range valid {
			if valid[i].Fingerprint == s.active.ver.Fingerprint {
				return &valid[i], ""
			}
		}
	}
	switch {
	case d.pin != "":
		return nil, "pinned to " + d.pin + ", which is not a valid, working version on disk"
	case len(valid) > 0:
		return nil, "every valid version failed to start"
	case len(d.versions) > 0:
		return nil, "no valid version on disk"
	default:
		return nil, "no version on disk"
	}
}

// ranksAbove orders versions for serving: stable versions first, newest
// first; a pre-release (2.0.0-rc.1) serves only when pinned or when no
// stable version is valid, so dropping a release candidate beside 1.9.0
// does not put it in production.
func ranksAbove(a, b manifest.Version) bool {
	if pa, pb := prerelease(a), prerelease(b); pa != pb {
		return !pa
	}
	return newer(a, b)
}

func prerelease(v manifest.Version) bool { return v.Semver != nil && v.Semver.Prerelease() != "" }

func newer(a, b manifest.Version) bool {
	if a.Semver == nil || b.Semver == nil {
		return a.Semver != nil
	}
	return a.Semver.GreaterThan(b.Semver)
}

// swapTo launches ver and swaps it in. It reports whether ver now serves.
// restart says ver is started again because its serving instance crashed;
// the active event carries it, so metrics and watchers count restarts
// without parsing why.
func (s *supervisor) swapTo(ctx context.Context, ver manifest.Version, why string, restart bool) bool {
	s.mu.Lock()
	s.starting = ver.Version
	s.mu.Unlock()
	inst, err := s.l.launchVersion(ctx, ver, s)
	if err == nil {
		var swapStart = time.Now()
		err = s.l.put(inst)
		if err != nil {
			inst.kill()
		} else {
			s.l.observeSwap(time.Since(swapStart))
		}
	}
	s.mu.Lock()
	s.starting = ""
	if err != nil {
		s.lastErr[ver.Version] = err.Error()
		switch {
		case errors.Is(err, proc.ErrIncomplete):
			s.l.hashes.Forget(ver.EntrypointPath) // the scan's digest, maybe cached, was not the file's
			s.incomplete[ver.Fingerprint] = err.Error()
		case restart:
			// A crash loop keeps retrying; it is not a bad version, and no
			// status read in between may say it is.
		default:
			s.failed[ver.Fingerprint] = err.Error()
		}
		if restart {
			s.restarts[ver.Version]++
		}
		s.mu.Unlock()
		state := StateFailed
		if errors.Is(err, proc.ErrIncomplete) {
			state = StateIncomplete
		}
		s.l.emit(Event{Skill: s.name, Version: ver.Version, From: StateStarting, State: state, Reason: err.Error()})
		return false
	}
	prev := s.active
	if s.crashed != nil && s.crashed.Fingerprint != ver.Fingerprint {
		s.restartN = 0 // a new deploy starts with a clean backoff
	}
	s.active, s.crashed, s.reason = inst, nil, ""
	delete(s.lastErr, ver.Version)
	if prev != nil {
		s.draining[prev] = struct{}{}
	}
	s.mu.Unlock()
	if s.restartTimer != nil {
		s.restartTimer.Stop()
		s.restartTimer = nil
	}
	s.l.emit(Event{Skill: s.name, Version: ver.Version, PID: inst.pid, From: StateStarting, State: StateActive, Reason: why,
		Restart: restart, Duration: time.Since(inst.startedAt)})
	if prev != nil {
		s.drain(prev, "replaced by "+ver.Version)
	}
	return true
}

// retire takes the skill out of service: its tools leave the registry first
// (so no new call finds them), then the instance drains.
func (s *supervisor) retire(reason string) {
	s.l.reg.Remove(s.name, reason)
	s.mu.Lock()
	prev := s.active
	wasCrashed := s.crashed != nil
	s.active, s.crashed, s.reason = nil, nil, reason
	if prev != nil {
		s.draining[prev] = struct{}{}
	}
	s.mu.Unlock()
	if s.restartTimer != nil {
		s.restartTimer.Stop()
		s.restartTimer = nil
	}
	if prev != nil {
		s.drain(prev, reason)
	} else if wasCrashed {
		s.l.emit(Event{Skill: s.name, State: StateStopped, Reason: reason})
	}
}

// drain stops inst in the background: no new leases, in-flight calls finish
// or the grace period ends, then the process is killed.
func (s *supervisor) drain(inst *instance, reason string) {
	s.l.emit(Event{Skill: s.name, Version: inst.version, PID: inst.pid, From: StateActive, State: StateDraining, Reason: reason})
	inst.beginDrain(s.l.cfg.Grace)
	s.l.wg.Add(1)
	go func() {
		defer s.l.wg.Done()
		start := time.Now()
		inst.stop(s.l.hardStop, s.l.cfg.Grace)
		s.mu.Lock()
		delete(s.draining, inst)
		s.mu.Unlock()
		s.l.emit(Event{Skill: s.name, Version: inst.version, PID: inst.pid, From: StateDraining, State: StateStopped,
			Reason: reason, Duration: time.Since(start)})
	}()
}

// onExit is called by an instance's exit watcher on an exit nobody asked
// for, as soon as the process is gone. The tools go unavailable here, not on
// the run loop, which may be busy launching a version for many seconds; the
// registry ignores it unless inst is what serves.
func (s *supervisor) onExit(inst *instance) {
	s.l.reg.SetAvailable(s.name, inst, false, "crashed")
	select {
	case s.crashCh <- inst:
	default: // the run loop is behind; a crash of the active instance is never lost because the channel holds 16
	}
}

// onCrash handles the death of a serving process on the run loop (onExit
// has made its tools unavailable already): the crash is recorded and
// announced, and a restart is scheduled with capped exponential backoff
// (reset after sustained uptime).
func (s *supervisor) onCrash(inst *instance) {
	<-inst.exited // reaped, or given up on after a moment: how it ended is as known as it gets
	s.mu.Lock()
	if inst != s.active {
		s.mu.Unlock()
		return // a draining instance died: its stop cleans up
	}
	ver := inst.ver
	why := "process exited unexpectedly"
	if status := inst.log.exitStatus(); status != "" {
		why += " (" + status + ")"
	}
	s.active, s.crashed = nil, &ver
	s.restarts[ver.Version]++
	s.lastErr[ver.Version] = why
	s.mu.Unlock()
	s.l.emit(Event{Skill: s.name, Version: ver.Version, PID: inst.pid, From: StateActive, State: StateCrashed, Reason: why})
	inst.kill() // reap its process group and run folder
	if time.Since(inst.startedAt) >= s.l.cfg.RestartResetAfter {
		s.restartN = 0
	}
	s.scheduleRestart()
}

func (s *supervisor) scheduleRestart() {
	d := s.l.cfg.RestartBackoff << min(s.restartN, 16)
	if d > s.l.cfg.RestartBackoffMax || d <= 0 {
		d = s.l.cfg.RestartBackoffMax
	}
	s.restartN++
	s.restartTimer = time.NewTimer(d)
}

func (s *supervisor) restart(ctx context.Context) {
	s.mu.Lock()
	ver := s.crashed
	s.mu.Unlock()
	if ver == nil {
		return
	}
	if !s.swapTo(ctx, *ver, "restarted after a crash", true) {
		s.mu.Lock()
		still := s.crashed != nil
		s.mu.Unlock()
		if still {
			s.scheduleRestart()
		}
	}
}

// shutdown retires the skill when the loader closes.
func (s *supervisor) shutdown() {
	if s.restartTimer != nil {
		s.restartTimer.Stop()
		s.restartTimer = nil
	}
	s.retire("host is shutting down")
}

// status copies out the skill's state.
func (s *supervisor) status() SkillStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SkillStatus{Name: s.name, Disabled: s.cur.disabled, Pinned: s.cur.pin}
	if s.active != nil {
		st.Active = s.active.version
	} else {
		st.Reason = s.reason
	}
	byVersion := map[string]*VersionStatus{}
	var order []string
	get := func(v string) *VersionStatus {
		if vs, ok := byVersion[v]; ok {
			return vs
		}
		vs := &VersionStatus{Version: v}
		byVersion[v] = vs
		order = append(order, v)
		return vs
	}
	versions := append([]manifest.Version(nil), s.cur.versions...)
	sort.SliceStable(versions, func(i, j int) bool { return newer(versions[j], versions[i]) })
	for _, v := range versions {
		vs := get(v.Version)
		vs.Problems = v.Problems
		if v.Manifest != nil {
			vs.Runtime = v.Manifest.RuntimeName()
			vs.Uses = v.Manifest.Uses
		}
		switch v.Status {
		case manifest.StatusInvalid:
			vs.State = StateInvalid
		case manifest.StatusIncomplete:
			vs.State = StateIncomplete
		default:
			vs.State = StateStopped
			if why, ok := s.failed[v.Fingerprint]; ok {
				vs.State, vs.LastError = StateFailed, why
			} else if why, ok := s.incomplete[v.Fingerprint]; ok {
				vs.State, vs.LastError = StateIncomplete, why
			}
		}
	}
	// A version reloaded in place (its files rewritten) has two instances
	// for a while, the new one active and the old one draining; each gets
	// its own entry, after the version's main one, so that neither's pid
	// and calls in flight hide the other's.
	filled := map[string]bool{}
	if s.active != nil {
		filled[s.active.version] = true
	}
	also := map[string][]*VersionStatus{}
	for _, inst := range s.drainingByAge() {
		vs := &VersionStatus{Version: inst.version}
		if filled[inst.version] {
			also[inst.version] = append(also[inst.version], vs)
		} else {
			vs = get(inst.version)
			filled[inst.version] = true
		}
		vs.State = StateDraining
		fillInstance(vs, inst)
		if end := inst.drainEnd.Load(); end != 0 {
			t := time.Unix(0, end)
			vs.DrainDeadline = &t
		}
	}
	if s.crashed != nil {
		get(s.crashed.Version).State = StateCrashed
	}
	if s.starting != "" {
		get(s.starting).State = StateStarting
	}
	if s.active != nil {
		vs := get(s.active.version)
		vs.State = StateActive
		fillInstance(vs, s.active)
		vs.DrainDeadline = nil
	}
	for _, v := range order {
		vs := byVersion[v]
		vs.Restarts = s.restarts[v]
		if vs.LastError == "" {
			vs.LastError = s.lastErr[v]
		}
		st.Versions = append(st.Versions, *vs)
		for _, d := range also[v] {
			st.Versions = append(st.Versions, *d)
		}
	}
	return st
}

// drainingByAge lists the draining instances, the newest first. s.mu must
// be held.
func (s *supervisor) drainingByAge() []*instance {
	out := make([]*instance, 0, len(s.draining))
	for inst := range s.draining {
		out = append(out, inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].startedAt.After(out[j].startedAt) })
	return out
}

func fillInstance(vs *VersionStatus, inst *instance) {
	vs.PID = inst.pid
	vs.Runtime = inst.ver.Manifest.RuntimeName()
	t := inst.startedAt
	vs.StartedAt = &t
	vs.InFlight = inst.inFlight()
	vs.Tools = inst.toolNames()
}
