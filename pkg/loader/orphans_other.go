//go:build !linux

package loader

import "github.com/hashicorp/go-hclog"

// sweeper is Linux-only: elsewhere there is no child subreaper, so a
// process that leaves its skill's group cannot be found.
type sweeper struct{}

// newSweeper returns none: Config.Subreaper is ignored off Linux.
func newSweeper(hclog.Logger) (*sweeper, error) { return nil, nil }

func (s *sweeper) beginLaunch()             {}
func (s *sweeper) endLaunch(int)            {}
func (s *sweeper) adopt(int)                {}
func (s *sweeper) forget(int)               {}
func (s *sweeper) trigger()                 {}
func (s *sweeper) run(done <-chan struct{}) { <-done }
