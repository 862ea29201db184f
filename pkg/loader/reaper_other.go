//go:build !unix

package loader

import "errors"

// reaper is not available off Unix: there are no process groups to kill.
type reaper struct{}

func startReaper([]string) (*reaper, error) {
	return nil, errors.New("loader: the skill reaper needs a Unix system")
}

func (r *reaper) pid() int    { return 0 }
func (r *reaper) track(int)   {}
func (r *reaper) untrack(int) {}
func (r *reaper) close()      {}
