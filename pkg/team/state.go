package team

import (
	"fmt"
	"slices"
	"time"

	"github.com/skillhost/skillhost/pkg/runs"
)

// The team log's records (<team>/team.jsonl). Each change to the team is
// one of these, durable before the change takes effect; the team's state
// is their fold.

type created struct {
	ID     string        `json:"id"`
	Lead   MemberSpec    `json:"lead"`
	Budget int64         `json:"budget,omitempty"`
	Grace  time.Duration `json:"grace_ns"`
}

type spawned struct {
	MemberSpec
	By string `json:"by"`
}

type statusChanged struct {
	Member string    `json:"member"`
	Status Status    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Until  time.Time `json:"until,omitzero"` // stopping: when the member is stopped at the latest
}

type requestMade struct {
	ID    string      `json:"id"`
	Type  MessageType `json:"type"`
	From  string      `json:"from"`
	To    string      `json:"to"`
	MsgID string      `json:"msg_id"`
}

type requestAnswered struct {
	ID      string `json:"id"`
	Approve bool   `json:"approve"`
	By      string `json:"by"`
	MsgID   string `json:"msg_id"`
}

type usageRecorded struct {
	Member string `json:"member"`
	Tokens int64  `json:"tokens"`
}

type taskCreated struct {
	TaskSpec
	By string `json:"by"`
}

type taskClaimed struct {
	ID      string    `json:"id"`
	Member  string    `json:"member"`
	Until   time.Time `json:"until"`
	Expired string    `json:"expired,omitempty"` // the member whose lease ran out, if any
}

type taskDone struct {
	ID     string `json:"id"`
	Member string `json:"member"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"` // set: the task failed
}

type teamStopped struct {
	Reason string `json:"reason"`
}

func (created) Kind() runs.Kind         { return "team.created" }
func (spawned) Kind() runs.Kind         { return "team.spawned" }
func (statusChanged) Kind() runs.Kind   { return "team.status" }
func (requestMade) Kind() runs.Kind     { return "team.request" }
func (requestAnswered) Kind() runs.Kind { return "team.answered" }
func (usageRecorded) Kind() runs.Kind   { return "team.usage" }
func (taskCreated) Kind() runs.Kind     { return "team.task_created" }
func (taskClaimed) Kind() runs.Kind     { return "team.task_claimed" }
func (taskDone) Kind() runs.Kind        { return "team.task_done" }
func (teamStopped) Kind() runs.Kind     { return "team.stopped" }

// memberState is what the team log says of a member.
type memberState struct {
	spec   MemberSpec
	lead   bool
	status Status // active, plan_mode, stopping or stopped
	reason string
	detail string
	until  time.Time
	used   int64
	task   string // the task it holds
}

type request struct {
	made     requestMade
	answered *requestAnswered
}

// state is the team folded from its log. It is written only by apply.
type state struct {
	id         string
	lead       string
	budget     int64
	grace      time.Duration
	used       int64
	members    map[string]*memberState
	order      []string // members in spawn order, the lead first
	requests   map[string]*request
	tasks      map[string]*Task
	taskOrder  []string
	stopped    bool
	stopReason string
}

func newState() state {
	return state{members: map[string]*memberState{}, requests: map[string]*request{}, tasks: map[string]*Task{}}
}

// replay folds one record read back from the team log.
func (s *state) replay(ev runs.Event) error {
	p, err := decodeTeamEvent(ev)
	if err != nil {
		return err
	}
	return s.apply(p, ev.Time)
}

func decodeTeamEvent(ev runs.Event) (runs.Payload, error) {
	switch ev.Kind {
	case created{}.Kind():
		return runs.Decode[created](ev)
	case spawned{}.Kind():
		return runs.Decode[spawned](ev)
	case statusChanged{}.Kind():
		return runs.Decode[statusChanged](ev)
	case requestMade{}.Kind():
		return runs.Decode[requestMade](ev)
	case requestAnswered{}.Kind():
		return runs.Decode[requestAnswered](ev)
	case usageRecorded{}.Kind():
		return runs.Decode[usageRecorded](ev)
	case taskCreated{}.Kind():
		return runs.Decode[taskCreated](ev)
	case taskClaimed{}.Kind():
		return runs.Decode[taskClaimed](ev)
	case taskDone{}.Kind():
		return runs.Decode[taskDone](ev)
	case teamStopped{}.Kind():
		return runs.Decode[teamStopped](ev)
	}
	return nil, fmt.Errorf("event %d: unknown team event kind %q", ev.Seq, ev.Kind)
}

// apply folds one event. The checks that refuse a request happen before
// its event is appended; apply trusts the log, and errors only on a log
// that contradicts itself.
func (s *state) apply(p runs.Payload, at time.Time) error {
	switch p := p.(type) {
	case created:
		s.id, s.lead, s.budget, s.grace = p.ID, p.Lead.Name, p.Budget, p.Grace
		s.addMember(p.Lead, true)
	case spawned:
		s.addMember(p.MemberSpec, false)
	case statusChanged:
		m := s.members[p.Member]
		if m == nil {
			return fmt.Errorf("status of unknown member %q", p.Member)
		}
		m.status, m.reason, m.detail, m.until = p.Status, p.Reason, p.Detail, p.Until
		if p.Status == StatusStopped && m.task != "" {
			// A stopped member's claim goes back to the board at once.
			if t := s.tasks[m.task]; t != nil && t.Owner == p.Member {
				t.Status, t.Owner, t.LeaseUntil = TaskOpen, "", time.Time{}
			}
			m.task = ""
		}
	case requestMade:
		s.requests[p.ID] = &request{made: p}
	case requestAnswered:
		r := s.requests[p.ID]
		if r == nil {
			return fmt.Errorf("answer to unknown request %q", p.ID)
		}
		r.answered = &p
	case usageRecorded:
		if m := s.members[p.Member]; m != nil {
			m.used += p.Tokens
		}
		s.used += p.Tokens
	case taskCreated:
		t := &Task{ID: p.ID, Title: p.Title, Description: p.Description, Deps: p.Deps, CreatedBy: p.By, Created: at}
		s.tasks[p.ID] = t
		s.taskOrder = append(s.taskOrder, p.ID)
		s.settle(t)
	case taskClaimed:
		t := s.tasks[p.ID]
		if t == nil {
			return fmt.Errorf("claim of unknown task %q", p.ID)
		}
		if old := s.members[t.Owner]; old != nil && old.task == t.ID {
			old.task = ""
		}
		t.Status, t.Owner, t.LeaseUntil = TaskClaimed, p.Member, p.Until
		if m := s.members[p.Member]; m != nil {
			m.task = t.ID
		}
	case taskDone:
		t := s.tasks[p.ID]
		if t == nil {
			return fmt.Errorf("end of unknown task %q", p.ID)
		}
		if m := s.members[p.Member]; m != nil && m.task == t.ID {
			m.task = ""
		}
		t.Owner, t.LeaseUntil, t.Finished = p.Member, time.Time{}, at
		if p.Error != "" {
			t.Status, t.Error = TaskFailed, p.Error
		} else {
			t.Status, t.Result = TaskCompleted, p.Result
		}
		// Dependents may become open (or fail with it).
		for _, id := range s.taskOrder {
			if d := s.tasks[id]; d.Status == TaskBlocked && slices.Contains(d.Deps, t.ID) {
				s.settle(d)
			}
		}
	case teamStopped:
		s.stopped, s.stopReason = true, p.Reason
	default:
		return fmt.Errorf("unexpected team payload %T", p)
	}
	return nil
}

func (s *state) addMember(spec MemberSpec, lead bool) {
	st := StatusActive
	if spec.PlanMode {
		st = StatusPlanMode
	}
	s.members[spec.Name] = &memberState{spec: spec, lead: lead, status: st}
	s.order = append(s.order, spec.Name)
}

// settle sets a blocked or new task's status from its dependencies: open
// once all completed, failed when one failed (its dependents in turn).
func (s *state) settle(t *Task) {
	status := TaskOpen
	for _, d := range t.Deps {
		switch dep := s.tasks[d]; dep.Status {
		case TaskFailed:
			t.Status, t.Error = TaskFailed, fmt.Sprintf("dependency %q failed", d)
			for _, id := range s.taskOrder {
				if x := s.tasks[id]; x.Status == TaskBlocked && slices.Contains(x.Deps, t.ID) {
					s.settle(x)
				}
			}
			return
		case TaskCompleted:
		default:
			status = TaskBlocked
		}
	}
	t.Status = status
}
