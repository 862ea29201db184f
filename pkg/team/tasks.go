package team

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

// TaskStatus is where a task on the board stands.
type TaskStatus string

// The task statuses.
const (
	TaskBlocked   TaskStatus = "blocked" // a dependency is not completed yet
	TaskOpen      TaskStatus = "open"    // claimable
	TaskClaimed   TaskStatus = "claimed" // held by Owner until LeaseUntil (claimable again after)
	TaskCompleted TaskStatus = "completed"
	TaskFailed    TaskStatus = "failed" // by its owner, or because a dependency failed
)

// DefaultLease is how long a claim lasts when Claim is given no lease.
const DefaultLease = 10 * time.Minute

// TaskSpec is what a task is created with.
type TaskSpec struct {
	ID          string   `json:"id"` // made when empty
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Deps        []string `json:"deps,omitempty"` // tasks that must complete before this one is claimable
}

// Task is a task on the board as it stands.
type Task struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Deps        []string   `json:"deps,omitempty"`
	Status      TaskStatus `json:"status"`
	Owner       string     `json:"owner,omitempty"` // the claimant, or who completed or failed it
	LeaseUntil  time.Time  `json:"lease_until,omitzero"`
	Result      string     `json:"result,omitempty"`
	Error       string     `json:"error,omitempty"`
	CreatedBy   string     `json:"created_by"`
	Created     time.Time  `json:"created"`
	Finished    time.Time  `json:"finished,omitzero"`
}

// Done reports whether the task is completed or failed: nothing more
// happens to it.
func (t Task) Done() bool { return t.Status == TaskCompleted || t.Status == TaskFailed }

// claimable reports whether a member may claim the task at now: open, or
// claimed by someone whose lease has run out.
func (t *Task) claimable(now time.Time) bool {
	return t.Status == TaskOpen || t.Status == TaskClaimed && !now.Before(t.LeaseUntil)
}

// CreateTasks adds tasks to the board, all or none. A task may depend on
// tasks already on the board or earlier or later in the same call.
// Unknown dependencies (ErrUnknownDependency), cycles
// (ErrDependencyCycle), reused ids (ErrTaskExists) and empty titles are
// all reported at once. Any member or Human may create tasks.
func (t *Team) CreateTasks(by string, specs ...TaskSpec) ([]Task, error) {
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	err := t.checkLiveLocked()
	if _, ok := t.st.members[by]; !ok && by != Human && err == nil {
		err = fmt.Errorf("creator %q: %w", by, ErrUnknownMember)
	}
	var errs []error
	batch := map[string]*TaskSpec{}
	for i := range specs {
		sp := &specs[i]
		if sp.ID == "" {
			sp.ID = newID("t")
		}
		switch {
		case !validName(sp.ID):
			errs = append(errs, fmt.Errorf("task %q: %w id: want lowercase letters and digits, words joined by - or _", sp.ID, ErrInvalid))
		case t.st.tasks[sp.ID] != nil || batch[sp.ID] != nil:
			errs = append(errs, fmt.Errorf("task %s: %w", sp.ID, ErrTaskExists))
		}
		if sp.Title == "" {
			errs = append(errs, fmt.Errorf("task %s: %w: no title", sp.ID, ErrInvalid))
		}
		batch[sp.ID] = sp
	}
	for _, sp := range specs {
		for _, d := range sp.Deps {
			if t.st.tasks[d] == nil && batch[d] == nil {
				errs = append(errs, fmt.Errorf("task %s: depends on %q: %w", sp.ID, d, ErrUnknownDependency))
			}
		}
	}
	t.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("team %s: create tasks: %w", t.id, err)
	}
	// Tasks on the board cannot depend on new ones, so a cycle lies
	// within the batch.
	errs = append(errs, findCycles(specs, batch)...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("team %s: create tasks: %w", t.id, err)
	}
	// Dependencies first, so the log folds each task after the ones it
	// names.
	ps := make([]taskCreated, 0, len(specs))
	seen := map[string]bool{}
	var add func(sp *TaskSpec)
	add = func(sp *TaskSpec) {
		if seen[sp.ID] {
			return
		}
		seen[sp.ID] = true
		for _, d := range sp.Deps {
			if b := batch[d]; b != nil {
				add(b)
			}
		}
		ps = append(ps, taskCreated{TaskSpec: *sp, By: by})
	}
	for i := range specs {
		add(&specs[i])
	}
	pls := make([]runs.Payload, len(ps))
	for i := range ps {
		pls[i] = ps[i]
	}
	if err := t.appendLocked(pls...); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Task, len(specs))
	for i, sp := range specs {
		out[i] = t.taskLocked(sp.ID)
	}
	return out, nil
}

// findCycles reports each cycle among the batch's tasks once, naming its
// path.
func findCycles(specs []TaskSpec, batch map[string]*TaskSpec) []error {
	const (
		unseen = iota
		onPath
		finished
	)
	mark := map[string]int{}
	var errs []error
	var path []string
	var visit func(id string)
	visit = func(id string) {
		mark[id] = onPath
		path = append(path, id)
		for _, d := range batch[id].Deps {
			if batch[d] == nil {
				continue
			}
			switch mark[d] {
			case onPath:
				i := slices.Index(path, d)
				cycle := append(slices.Clone(path[i:]), d)
				errs = append(errs, fmt.Errorf("tasks %v: %w", cycle, ErrDependencyCycle))
			case unseen:
				visit(d)
			}
		}
		path = path[:len(path)-1]
		mark[id] = finished
	}
	for _, sp := range specs {
		if mark[sp.ID] == unseen {
			visit(sp.ID)
		}
	}
	return errs
}

// taskLocked copies a task, with the lease's expiry applied. t.mu held.
func (t *Team) taskLocked(id string) Task {
	c := *t.st.tasks[id]
	c.Deps = slices.Clone(c.Deps)
	return c
}

// Task returns one task.
func (t *Team) Task(id string) (Task, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.tasks[id] == nil {
		return Task{}, fmt.Errorf("team %s: task %q: %w", t.id, id, ErrUnknownTask)
	}
	return t.taskLocked(id), nil
}

// Tasks returns the board in creation order.
func (t *Team) Tasks() []Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Task, len(t.st.taskOrder))
	for i, id := range t.st.taskOrder {
		out[i] = t.taskLocked(id)
	}
	return out
}

// Claim gives the task to the member for lease (DefaultLease when 0),
// atomically: of members racing for a task, one gets it and the others
// get ErrNotClaimable. A claim whose lease ran out (its member died or
// stalled) may be taken over; the record names whose lease expired. A
// member holds at most one task (ErrHoldsTask), so the lead never hands
// out work twice by accident. The member renews its lease with Renew.
func (t *Team) Claim(member, id string, lease time.Duration) (Task, error) {
	return t.claim(member, id, lease)
}

// ClaimNext claims the first claimable task on the board, in creation
// order. ok is false when there is none.
func (t *Team) ClaimNext(member string, lease time.Duration) (task Task, ok bool, err error) {
	task, err = t.claim(member, "", lease)
	if errors.Is(err, ErrNotClaimable) {
		return Task{}, false, nil
	}
	return task, err == nil, err
}

func (t *Team) claim(member, id string, lease time.Duration) (Task, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	now := t.now()
	t.mu.Lock()
	if err := t.checkMemberLocked(member); err != nil {
		t.mu.Unlock()
		return Task{}, fmt.Errorf("team %s: claim: %w", t.id, err)
	}
	if held := t.st.members[member].task; held != "" {
		if ht := t.st.tasks[held]; ht.Owner == member && ht.Status == TaskClaimed {
			t.mu.Unlock()
			return Task{}, fmt.Errorf("team %s: %s claims %q: %w %s", t.id, member, id, ErrHoldsTask, held)
		}
	}
	var task *Task
	if id != "" {
		task = t.st.tasks[id]
		switch {
		case task == nil:
			t.mu.Unlock()
			return Task{}, fmt.Errorf("team %s: claim %q: %w", t.id, id, ErrUnknownTask)
		case !task.claimable(now):
			t.mu.Unlock()
			why := string(task.Status)
			if task.Status == TaskClaimed {
				why = fmt.Sprintf("held by %s until %s", task.Owner, task.LeaseUntil.Format(time.RFC3339))
			}
			return Task{}, fmt.Errorf("team %s: claim %s: %w (%s)", t.id, id, ErrNotClaimable, why)
		}
	} else {
		for _, tid := range t.st.taskOrder {
			if c := t.st.tasks[tid]; c.claimable(now) {
				task = c
				break
			}
		}
		if task == nil {
			t.mu.Unlock()
			return Task{}, fmt.Errorf("team %s: %w: no open task", t.id, ErrNotClaimable)
		}
	}
	rec := taskClaimed{ID: task.ID, Member: member, Until: now.UTC().Add(lease)}
	if task.Status == TaskClaimed && task.Owner != member {
		rec.Expired = task.Owner
	}
	t.mu.Unlock()
	if err := t.appendLocked(rec); err != nil {
		return Task{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.taskLocked(task.ID), nil
}

// checkMemberLocked refuses an unknown or stopped member. t.mu held.
func (t *Team) checkMemberLocked(name string) error {
	if err := t.checkLiveLocked(); err != nil {
		return err
	}
	ms, ok := t.st.members[name]
	switch {
	case !ok:
		return fmt.Errorf("%q: %w", name, ErrUnknownMember)
	case ms.status == StatusStopped || ms.status == StatusStopping:
		return fmt.Errorf("%s: %w (%s)", name, ErrMemberStopped, ms.status)
	}
	return nil
}

// Renew extends the member's lease on a task it holds.
func (t *Team) Renew(member, id string, lease time.Duration) (Task, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	err := t.checkHolderLocked(member, id)
	t.mu.Unlock()
	if err != nil {
		return Task{}, fmt.Errorf("team %s: renew: %w", t.id, err)
	}
	if err := t.appendLocked(taskClaimed{ID: id, Member: member, Until: t.now().UTC().Add(lease)}); err != nil {
		return Task{}, err
	}
	return t.Task(id)
}

// checkHolderLocked: the member holds the task (a lapsed lease still
// counts until someone else claims it). t.mu held.
func (t *Team) checkHolderLocked(member, id string) error {
	if err := t.checkMemberLocked(member); err != nil {
		return err
	}
	task := t.st.tasks[id]
	switch {
	case task == nil:
		return fmt.Errorf("task %q: %w", id, ErrUnknownTask)
	case task.Status != TaskClaimed || task.Owner != member:
		return fmt.Errorf("%s and task %s (%s, owner %q): %w", member, id, task.Status, task.Owner, ErrNotClaimant)
	}
	return nil
}

// Complete ends a task the member holds with its result; tasks that
// depended only on completed tasks become open.
func (t *Team) Complete(member, id, result string) (Task, error) {
	return t.finish(member, id, result, "")
}

// Fail ends a task the member holds as failed; its dependents fail with it.
func (t *Team) Fail(member, id, reason string) (Task, error) {
	if reason == "" {
		reason = "failed"
	}
	return t.finish(member, id, "", reason)
}

func (t *Team) finish(member, id, result, reason string) (Task, error) {
	t.appendMu.Lock()
	defer t.appendMu.Unlock()
	t.mu.Lock()
	err := t.checkHolderLocked(member, id)
	t.mu.Unlock()
	if err != nil {
		return Task{}, fmt.Errorf("team %s: end task: %w", t.id, err)
	}
	if err := t.appendLocked(taskDone{ID: id, Member: member, Result: result, Error: reason}); err != nil {
		return Task{}, err
	}
	return t.Task(id)
}
