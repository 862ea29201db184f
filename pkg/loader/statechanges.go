package loader

// A StateNotifier is a StateStore whose decisions can change from
// elsewhere: another host of a fleet, another operator. Changes returns a
// channel that receives a value after decisions changed; the loader then
// rescans, so every host follows the shared decisions without a file event
// or an API call. The store owns the channel and never closes it; it
// should merge bursts (a buffer of one, sends that never block), since one
// rescan reads every decision. The loader stops listening when it closes.
type StateNotifier interface {
	Changes() <-chan struct{}
}

// followState rescans on each change of a StateNotifier store, whether or
// not the tree is watched.
func (l *Loader) followState() {
	n, ok := l.cfg.State.(StateNotifier)
	if !ok {
		return
	}
	changes := n.Changes()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.ctx.Done():
				return
			case <-changes:
				if _, _, err := l.scanAndDispatch(false); err != nil && l.ctx.Err() == nil {
					l.log.Warn("rescan after a change of operator decisions failed", "error", err)
				}
			}
		}
	}()
}
