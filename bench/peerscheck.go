package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TpbenchCheck is tpbench's own load run on a target right after
// sysbench's run of the same step (PeersConfig.Tpbench): the same
// workload, clients, warmup and measured time, on the same tables, so
// that the two load generators can be compared on one machine.
type TpbenchCheck struct {
	Transactions uint64  `json:"transactions"`
	Queries      uint64  `json:"queries"`
	TPS          float64 `json:"tps"`
	P95Ms        float64 `json:"p95_ms"`
	Errors       uint64  `json:"errors"`
	// ClientCPUUsPerTx is tpbench's own CPU (user + system) per
	// committed transaction; MachineCPUUsPerTx the whole machine's busy
	// time per transaction (/proc/stat).
	ClientCPUUsPerTx  float64 `json:"client_cpu_us_per_tx"`
	MachineCPUUsPerTx float64 `json:"machine_cpu_us_per_tx,omitempty"`
	// Error is why the run failed.
	Error string `json:"error,omitempty"`
}

// checkAgreement is the largest difference from sysbench's TPS at which
// tpbench counts as agreeing with it.
const checkAgreement = 0.10

// runTpbenchCheck runs tpbench's load for step st on t as sysbench ran it.
func runTpbenchCheck(ctx context.Context, cfg PeersConfig, st DemoStep, t Target) *TpbenchCheck {
	wl, err := NewWorkload(st.Workload, Schema{Tables: cfg.Tables, TableSize: cfg.TableSize, Prepared: cfg.PSMode == "auto"})
	if err != nil {
		return &TpbenchCheck{Error: err.Error()}
	}
	res, err := Run(ctx, Step{Target: t, Workload: wl, Threads: st.Threads, Duration: cfg.Duration,
		Warmup: max(cfg.Warmup, 0), Seed: 1, Logger: cfg.Logger})
	if err != nil {
		return &TpbenchCheck{Error: err.Error()}
	}
	c := &TpbenchCheck{Transactions: res.Transactions, Queries: res.Queries, TPS: res.TPS, P95Ms: res.Latency.P95,
		Errors: res.ErrorTotal}
	if res.Transactions > 0 {
		c.ClientCPUUsPerTx = (res.ClientCPU.UserSec + res.ClientCPU.SystemSec) * 1e6 / float64(res.Transactions)
		if h := res.Host; h != nil && res.DurationSec > 0 {
			c.MachineCPUUsPerTx = h.CPUBusyPct / 100 * float64(res.ClientCPU.Cores) * res.DurationSec * 1e6 / float64(res.Transactions)
		}
	}
	return c
}

// sysbenchClientUsPerTx is sysbench's own CPU per transaction in run r.
func (r PeerRun) sysbenchClientUsPerTx() float64 {
	if r.Transactions == 0 {
		return 0
	}
	return r.ClientCPUUsPerStmt * float64(r.Queries) / float64(r.Transactions)
}

// peersCheckHeader is the tpbench-against-sysbench table.
var peersCheckHeader = []string{"workload", "clients", "target", "sysbench TPS", "tpbench TPS", "tpbench/sysbench",
	"p95 ms sysbench / tpbench", "client CPU µs/tx sysbench / tpbench", "machine CPU µs/tx sysbench / tpbench",
	"machine − client µs/tx sysbench / tpbench"}

// writeCheckTable writes how tpbench's own load compares with sysbench's
// on every step and target (summed over the rounds both ran), and how
// many pairs agree within checkAgreement.
func (r *PeersReport) writeCheckTable(b *bytes.Buffer) error {
	var rows [][]string
	agree, pairs, rest := 0, 0, 0
	var off []string
	for _, s := range r.steps() {
		for _, t := range r.Targets {
			var sbTx, tbTx, sbSec, tbSec, sbCli, tbCli, sbMach, tbMach, sbP95, tbP95 float64
			n := 0
			for _, run := range s.runs[t] {
				c := run.Tpbench
				if c == nil || run.Error != "" || c.Error != "" || run.TPS == 0 || c.TPS == 0 {
					continue
				}
				n++
				sbTx += float64(run.Transactions)
				sbSec += float64(run.Transactions) / run.TPS
				tbTx += float64(c.Transactions)
				tbSec += float64(c.Transactions) / c.TPS
				sbCli += run.sysbenchClientUsPerTx()
				tbCli += c.ClientCPUUsPerTx
				sbMach += run.MachineCPUUsPerTx
				tbMach += c.MachineCPUUsPerTx
				sbP95 += run.P95Ms
				tbP95 += c.P95Ms
			}
			if n == 0 {
				continue
			}
			sbTPS, tbTPS := sbTx/sbSec, tbTx/tbSec
			ratio := tbTPS / sbTPS
			pairs++
			verdict := ""
			if math.Abs(ratio-1) <= checkAgreement {
				agree++
			} else {
				verdict = " ✗"
				off = append(off, fmt.Sprintf("%s on %s (%.2f×)", stepLabel(s.wl, s.n), t, ratio))
			}
			f := float64(n)
			// What the rest of the machine (server, relay, kernel) spends
			// per transaction for each tool's load: the same system
			// measured the same way agrees here even where the tools' own
			// cost, which a CPU-bound machine takes from the rest, does not.
			sbRest, tbRest := (sbMach-sbCli)/f, (tbMach-tbCli)/f
			restCol := "–"
			if sbMach > 0 && tbMach > 0 {
				restCol = formatThousands(sbRest) + " / " + formatThousands(tbRest)
				if q := tbRest / sbRest; math.Abs(q-1) <= checkAgreement {
					rest++
				} else {
					restCol += fmt.Sprintf(" (%.2f×)", q)
				}
			}
			rows = append(rows, []string{s.wl, strconv.Itoa(s.n), t, formatThousands(sbTPS), formatThousands(tbTPS),
				fmt.Sprintf("%.2f×%s", ratio, verdict), formatMs(sbP95/f) + " / " + formatMs(tbP95/f),
				formatThousands(sbCli/f) + " / " + formatThousands(tbCli/f),
				formatThousands(sbMach/f) + " / " + formatThousands(tbMach/f), restCol})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(b, "\ntpbench against sysbench (--tpbench: tpbench's own load right after each sysbench run, the same workload, "+
		"clients, warmup and measured time on the same target and tables; TPS over the rounds both ran, the rest their mean; "+
		"client CPU: each tool's own user+system time per transaction; ✗: more than %.0f%% apart):\n\n", checkAgreement*100)
	if err := renderMarkdownAligned(b, peersCheckHeader, rows, "lrl"); err != nil {
		return fmt.Errorf("bench: peers: %w", err)
	}
	fmt.Fprintf(b, "\ntpbench within %.0f%% of sysbench: %d of %d", checkAgreement*100, agree, pairs)
	if len(off) > 0 {
		fmt.Fprintf(b, "; apart: %s", strings.Join(off, ", "))
	}
	fmt.Fprintf(b, ". The machine's CPU per transaction less the client's own within %.0f%%: %d of %d.\n", checkAgreement*100, rest, pairs)
	return nil
}

// formatMs prints a latency in ms: two decimals below 10 ms, else whole
// thousands-separated milliseconds.
func formatMs(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return formatThousands(v)
}

// line is the progress line of a check beside sysbench's run.
func (c *TpbenchCheck) line(sb PeerRun) string {
	if c.Error != "" {
		return "tpbench FAILED: " + c.Error
	}
	ratio := 0.0
	if sb.TPS > 0 {
		ratio = c.TPS / sb.TPS
	}
	return fmt.Sprintf("tpbench %9.1f tps (%.2f× sysbench)  p95 %s ms  errors %d  client CPU %.0f µs/tx (sysbench %.0f)",
		c.TPS, ratio, formatMs(c.P95Ms), c.Errors, c.ClientCPUUsPerTx, sb.sysbenchClientUsPerTx())
}
