package bench

import (
	"maps"
	"slices"
	"time"
)

// StepResult is what Run measured in a step's hold (warmup excluded). It
// is one entry of results.json.
type StepResult struct {
	// Target is the Target's name.
	Target string `json:"target"`
	// Workload is the workload's name.
	Workload string `json:"workload"`
	// Threads is the number of client connections.
	Threads int `json:"threads"`
	// Started is when the measured hold began (after the warmup).
	Started time.Time `json:"started"`
	// WarmupSec is the warmup before the hold.
	WarmupSec float64 `json:"warmup_s"`
	// DurationSec is the hold's wall-clock length, the divisor of TPS.
	DurationSec float64 `json:"duration_s"`

	// Transactions completed successfully in the hold (by end time).
	Transactions uint64 `json:"transactions"`
	// Queries is the statements sent by transactions that ended in the
	// hold, BEGIN/COMMIT and those of failed or retried attempts included.
	Queries uint64  `json:"queries"`
	TPS     float64 `json:"tps"`
	QPS     float64 `json:"qps"`
	// Latency of successful transactions, from the first attempt's start
	// to the end of the successful one.
	Latency Latency `json:"latency"`

	// Errors counts failed transactions by MySQL error number or ErrKey*
	// (see ErrorName). Retried deadlocks and lock wait timeouts are not
	// failures; they are counted in Deadlocks and LockWaitTimeouts.
	Errors map[string]uint64 `json:"errors"`
	// ErrorTotal is the sum of Errors.
	ErrorTotal uint64 `json:"error_total"`
	// Deadlocks and LockWaitTimeouts are retried attempts (1213, 1205).
	Deadlocks        uint64 `json:"deadlocks_retried"`
	LockWaitTimeouts uint64 `json:"lock_wait_timeouts_retried"`
	// Reconnects counts lost connections that were replaced.
	Reconnects uint64 `json:"reconnects"`
	// SuccessPct is Transactions / (Transactions + ErrorTotal) × 100.
	SuccessPct float64 `json:"success_pct"`

	// ClientCPU is the benchmark process's CPU use in the hold.
	ClientCPU ClientCPU `json:"client_cpu"`
	// Host is the machine's CPU use in the hold (Linux; else absent).
	Host *HostUsage `json:"host,omitempty"`
	// Server is the server's status in the hold (when Step.ServerDSN
	// was set and reachable).
	Server *ServerStatus `json:"server,omitempty"`
	// Processes are the local servers' and relays' figures in the hold.
	Processes []ProcessUsage `json:"processes,omitempty"`
	// RelayCPUUsPerStmt is the CPU time (user + system) the target's
	// relay used in the hold, in µs per statement the clients completed
	// (Queries): what a proxy in front of the server costs per statement.
	// 0 when the target has no watched relay (the server directly).
	RelayCPUUsPerStmt float64 `json:"relay_cpu_us_per_stmt,omitempty"`
	// ServerCPUUsPerStmt is the same for the server process behind the
	// target; with RelayCPUUsPerStmt it is the total cost of a statement
	// (the client's excluded). 0 when the server is not a watched local
	// process.
	ServerCPUUsPerStmt float64 `json:"server_cpu_us_per_stmt,omitempty"`
	// Proxy is tpproxy's own view of the hold, from its admin port (for
	// targets given one).
	Proxy *ProxyStep `json:"proxy,omitempty"`
	// Confirm marks a rerun of a target's last passing step (--confirm).
	Confirm bool `json:"confirm,omitempty"`
	// Params are the settings a sweep applied for this run.
	Params map[string]string `json:"params,omitempty"`

	// Shards describes a step merged from shards (tpbench merge).
	Shards *StepShards `json:"shards,omitempty"`

	// Histogram holds all latencies of the hold (HDR, raw counts), for
	// merging steps: a confirmation hold, a soak's intervals, shards'
	// parts of a step (tpbench merge). Absent in results.json written
	// before it was kept there.
	Histogram *Histogram `json:"histogram,omitempty"`
}

// derive computes what follows from the counts, the hold and the
// histogram: latency, TPS, QPS, success and CPU per statement. Run and
// Merge both end with it.
func (r *StepResult) derive() {
	r.Latency = r.Histogram.Summary()
	if r.DurationSec > 0 {
		r.TPS = float64(r.Transactions) / r.DurationSec
		r.QPS = float64(r.Queries) / r.DurationSec
	}
	if n := r.Transactions + r.ErrorTotal; n > 0 {
		r.SuccessPct = float64(r.Transactions) / float64(n) * 100
	}
	r.setCPUPerStmt()
}

// Label names the step ("oltp_read_write/300") without the target.
func (r StepResult) Label() string { return stepLabel(r.Workload, r.Threads) }

// ErrorKeys returns the keys of Errors, sorted.
func (r StepResult) ErrorKeys() []string {
	return slices.Sorted(maps.Keys(r.Errors))
}
