package tiers

import (
	"fmt"
	"slices"
	"time"
)

// RTT summarizes round-trip samples.
type RTT struct {
	N             int
	Min, P50, P99 time.Duration
}

func summarize(s []time.Duration) RTT {
	if len(s) == 0 {
		return RTT{}
	}
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return RTT{N: len(s), Min: s[0], P50: at(0.5), P99: at(0.99)}
}

func (r RTT) String() string {
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }
	return fmt.Sprintf("min %s / p50 %s / p99 %s µs over %d", us(r.Min), us(r.P50), us(r.P99), r.N)
}
