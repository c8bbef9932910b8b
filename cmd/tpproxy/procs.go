package main

import (
	"log/slog"
	"os"
	"runtime"
)

// defaultProcs sets GOMAXPROCS to half the CPUs (at least one) unless
// $GOMAXPROCS says otherwise. tpproxy mostly waits on sockets; with a P
// per CPU, Go's idle Ps spin and steal on every network wake-up (a futex
// or a 3 µs nanosleep per statement), CPU taken from the database server
// that usually shares the machine. Measured on 2 CPUs with tpbench peers
// (sysbench oltp_point_select, 8 clients): 48.6–52.1 µs of proxy CPU per
// statement with GOMAXPROCS=1 against 57.8–58.6 µs with 2, at the same
// TPS.
func defaultProcs(log *slog.Logger) {
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		log.Debug("GOMAXPROCS from the environment", "gomaxprocs", runtime.GOMAXPROCS(0))
		return
	}
	n := max(1, runtime.NumCPU()/2)
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS set to half the CPUs (set $GOMAXPROCS to change it)", "gomaxprocs", n, "cpus", runtime.NumCPU())
}
