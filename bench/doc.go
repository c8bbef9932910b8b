// Package bench is tpbench's engine: sysbench-compatible workloads, a
// closed-loop load driver with HDR latency histograms, server and host
// sampling around each step, direct-versus-proxy comparison, and the
// reports (text table, summary.md, results.json).
//
// The unit of measurement is a Step: one target, one workload, a fixed
// number of client connections, a warmup and a measured hold. Run executes
// a Step and returns a StepResult; Compare pairs a direct and a proxy
// result of the same step. Ramps, stop conditions, sweeps and soaks are
// sequences of Steps built on top of Run.
//
// Demo runs the whole before/after comparison on a private sandbox server
// with tpproxy in-process, as `tpbench demo` does.
package bench
