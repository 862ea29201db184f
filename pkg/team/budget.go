package team

import "fmt"

// RecordUsage adds tokens a member's model call cost. When that takes the
// member past its budget, or the team past the team's, the member (for
// the team's budget: every member) is stopped with reason
// budget_exceeded, the lead is sent a notice saying so, and the error
// wraps ErrBudgetExceeded. A driver also calls CheckBudget before each
// model call.
func (t *Team) RecordUsage(name string, tokens int64) error {
	if tokens < 0 {
		return fmt.Errorf("team %s: usage of %s: %w: negative tokens", t.id, name, ErrInvalid)
	}
	t.mu.Lock()
	_, ok := t.st.members[name]
	err := t.checkLiveLocked()
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("team %s: usage of %q: %w", t.id, name, ErrUnknownMember)
	}
	if err != nil {
		return err
	}
	if err := t.append(usageRecorded{Member: name, Tokens: tokens}); err != nil {
		return err
	}
	return t.enforceBudget(name)
}

// CheckBudget reports, before a model call, whether the member may still
// spend: an error wrapping ErrBudgetExceeded or ErrMemberStopped if not.
func (t *Team) CheckBudget(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms, ok := t.st.members[name]
	switch {
	case !ok:
		return fmt.Errorf("team %s: %q: %w", t.id, name, ErrUnknownMember)
	case ms.status == StatusStopped && ms.reason == ReasonBudgetExceeded:
		return fmt.Errorf("team %s: %s: %w", t.id, name, ErrBudgetExceeded)
	case ms.status == StatusStopped:
		return fmt.Errorf("team %s: %s: %w (%s)", t.id, name, ErrMemberStopped, ms.reason)
	case ms.spec.Budget > 0 && ms.used >= ms.spec.Budget, t.st.budget > 0 && t.st.used >= t.st.budget:
		return fmt.Errorf("team %s: %s: %w", t.id, name, ErrBudgetExceeded)
	}
	return nil
}

func (t *Team) enforceBudget(name string) error {
	t.mu.Lock()
	ms := t.st.members[name]
	mine := ms.spec.Budget > 0 && ms.used > ms.spec.Budget
	team := t.st.budget > 0 && t.st.used > t.st.budget
	used, budget, tused, tbudget, lead := ms.used, ms.spec.Budget, t.st.used, t.st.budget, t.st.lead
	var stop []string
	switch {
	case team:
		for _, n := range t.st.order {
			if t.st.members[n].status != StatusStopped {
				stop = append(stop, n)
			}
		}
	case mine && ms.status != StatusStopped:
		stop = []string{name}
	}
	t.mu.Unlock()
	if len(stop) == 0 {
		if mine || team {
			return fmt.Errorf("team %s: %s: %w", t.id, name, ErrBudgetExceeded)
		}
		return nil
	}
	var detail, noticeID string
	if team {
		detail = fmt.Sprintf("the team used %d tokens of its budget of %d", tused, tbudget)
		noticeID = fmt.Sprintf("budget:team:%d", tused)
	} else {
		detail = fmt.Sprintf("%s used %d tokens of its budget of %d", name, used, budget)
		noticeID = fmt.Sprintf("budget:%s:%d", name, used)
	}
	for _, n := range stop {
		if err := t.stopMember(n, ReasonBudgetExceeded, detail); err != nil {
			return err
		}
	}
	_, err := t.deliver(Message{ID: noticeID, Type: TypeNotice, From: System, To: lead,
		Content: fmt.Sprintf("stopped %v: %s: %s", stop, ReasonBudgetExceeded, detail)})
	if err != nil {
		return err
	}
	return fmt.Errorf("team %s: %s: %w (%s)", t.id, name, ErrBudgetExceeded, detail)
}
