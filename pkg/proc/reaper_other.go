//go:build !unix

package proc

import "errors"

// Reaper is not available off Unix: there are no process groups to kill.
type Reaper struct{}

// StartReaper fails: see Reaper.
func StartReaper([]string) (*Reaper, error) {
	return nil, errors.New("proc: the skill reaper needs a Unix system")
}

// MaybeRunReaper returns at once: no process is ever started as a watchdog
// off Unix.
func MaybeRunReaper() {}

func (r *Reaper) PID() int    { return 0 }
func (r *Reaper) Track(int)   {}
func (r *Reaper) Untrack(int) {}
func (r *Reaper) Close()      {}
