//go:build !linux

package tiers

import (
	"context"
	"fmt"
)

func (t *Tiers) startDelayer(context.Context) error {
	return fmt.Errorf("%w: the NFQUEUE delayer is Linux only", ErrUnavailable)
}

// MaybeRunDelayer returns at once: there is no delayer off Linux.
func MaybeRunDelayer() {}

// ProbeRTT is Linux only.
func ProbeRTT(context.Context, string, string, int) (RTT, error) {
	return RTT{}, fmt.Errorf("%w: Linux only", ErrUnavailable)
}
