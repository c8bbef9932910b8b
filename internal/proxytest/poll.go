package proxytest

import "time"

// Poll reports whether cond came true within timeout, checking it every
// interval on a ticker. It is for state that changes in another process or
// goroutine with no event to wait on (the server's status counters, the
// proxy's session table, an HTTP endpoint).
func Poll(timeout, interval time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}
