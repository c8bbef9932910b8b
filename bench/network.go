package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/tiers"
)

// ParseNetworks reads --network: a comma-separated list of "loopback"
// and one-way delays such as "0.2ms", each a network the demo runs over
// (0 is loopback).
func ParseNetworks(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := tiers.ParseNetwork(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%w: --network %q: %w", ErrBadRamp, s, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// MaybeRunDelayer turns this process into the NFQUEUE delayer of a
// delayed network when it was started as one (tpbench re-executes itself
// for that); otherwise it returns at once. Call it first in main.
func MaybeRunDelayer() { tiers.MaybeRunDelayer() }
