package main

import (
	"os"
	"testing"

	"github.com/tpproxy/tpproxy/bench"
)

func TestMain(m *testing.M) {
	// The demo over a delayed network re-executes this binary as its
	// packet delayer.
	bench.MaybeRunDelayer()
	os.Exit(m.Run())
}
