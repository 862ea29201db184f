package proc

import "time"

// pollExit is WaitExit's fallback where the process cannot be waited on:
// it asks exited every 50 ms.
func pollExit(exited func() bool) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		if exited() {
			return
		}
	}
}
