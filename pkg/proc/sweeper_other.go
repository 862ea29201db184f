//go:build !linux

package proc

import "github.com/hashicorp/go-hclog"

// Sweeper is Linux-only: elsewhere there is no child subreaper, so a
// process that leaves its skill's group cannot be found.
type Sweeper struct{}

// NewSweeper returns none: there is no child subreaper off Linux.
func NewSweeper(hclog.Logger) (*Sweeper, error) { return nil, nil }

func (s *Sweeper) BeginLaunch()             {}
func (s *Sweeper) EndLaunch(int)            {}
func (s *Sweeper) Adopt(int)                {}
func (s *Sweeper) Forget(int)               {}
func (s *Sweeper) Trigger()                 {}
func (s *Sweeper) Run(done <-chan struct{}) { <-done }
