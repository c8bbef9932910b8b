// Command tpbench benchmarks MySQL/MariaDB with and without tpproxy in front,
// and manages the private servers it measures (tpbench sandbox).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tpproxy/tpproxy/bench"
)

func main() {
	// tpbench re-executes itself as a delayed network's packet delayer.
	bench.MaybeRunDelayer()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tpbench:", err)
		os.Exit(1)
	}
}
