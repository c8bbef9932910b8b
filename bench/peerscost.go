package bench

import (
	"bytes"
	"fmt"
	"strconv"
)

// peersCostHeader is peers.md's table of where a transaction's CPU goes.
var peersCostHeader = []string{"workload", "clients", "target", "TPS", "machine µs/tx",
	"relay user", "relay sys", "server", "client", "rest", "irq+softirq (within)",
	"relay calls/stmt", "server calls/stmt", "client calls/stmt", "relay switches/stmt", "server switches/stmt"}

// txCost is one run's machine CPU per transaction by where it went, the
// system calls per statement of the relay, the server and sysbench, and
// the relay's and the server's context switches per statement (a
// voluntary one is a wait: a wakeup).
type txCost struct {
	tps, machine, relayUser, relaySys, server, client, irq, rest float64
	relayCalls, serverCalls, clientCalls                         float64
	relaySwitches, serverSwitches                                float64
	hasCalls                                                     bool
}

// cost is r's txCost; ok is false for a failed run or one without the
// machine's figures.
func (r PeerRun) cost() (c txCost, ok bool) {
	if r.Error != "" || r.Machine == nil || r.Transactions == 0 || r.Queries == 0 {
		return c, false
	}
	perTx := func(sec float64) float64 { return sec * 1e6 / float64(r.Transactions) }
	perStmt := func(n float64) float64 { return n / float64(r.Queries) }
	c.tps, c.machine = r.TPS, r.MachineCPUUsPerTx
	c.irq = perTx(r.Machine.IRQSec + r.Machine.SoftIRQSec)
	c.hasCalls = true
	for _, p := range r.Processes {
		calls := perStmt(float64(p.Syscalls))
		if p.Syscalls == 0 {
			c.hasCalls = false
		}
		switches := perStmt(p.CtxSwitchesPerSec * r.CPUWindowSec)
		switch p.Kind {
		case ProcRelay:
			c.relayUser += perTx(p.UserSec)
			c.relaySys += perTx(p.SystemSec)
			c.relayCalls += calls
			c.relaySwitches += switches
		case ProcServer:
			c.server += perTx(p.CPUSec)
			c.serverCalls += calls
			c.serverSwitches += switches
		case ProcClient:
			c.client += perTx(p.CPUSec)
			c.clientCalls += calls
		}
	}
	c.rest = c.machine - c.relayUser - c.relaySys - c.server - c.client
	return c, true
}

// meanCost is the mean of the rounds' costs; n is how many had one.
func meanCost(runs []PeerRun) (m txCost, n int) {
	m.hasCalls = true
	for _, r := range runs {
		c, ok := r.cost()
		if !ok {
			continue
		}
		n++
		m.tps += c.tps
		m.machine += c.machine
		m.relayUser += c.relayUser
		m.relaySys += c.relaySys
		m.server += c.server
		m.client += c.client
		m.irq += c.irq
		m.rest += c.rest
		m.relayCalls += c.relayCalls
		m.serverCalls += c.serverCalls
		m.clientCalls += c.clientCalls
		m.relaySwitches += c.relaySwitches
		m.serverSwitches += c.serverSwitches
		m.hasCalls = m.hasCalls && c.hasCalls
	}
	if n == 0 {
		return m, 0
	}
	f := float64(n)
	for _, v := range []*float64{&m.tps, &m.machine, &m.relayUser, &m.relaySys, &m.server, &m.client, &m.irq, &m.rest,
		&m.relayCalls, &m.serverCalls, &m.clientCalls, &m.relaySwitches, &m.serverSwitches} {
		*v /= f
	}
	return m, n
}

// writeCostTable writes the breakdown of the machine's CPU per
// transaction, the mean over each step's rounds, when the runs have it.
func (r *PeersReport) writeCostTable(b *bytes.Buffer) error {
	var rows [][]string
	us := func(v float64) string { return formatThousands(v) }
	calls := func(c txCost, v float64, relay bool) string {
		switch {
		case relay && c.relayUser+c.relaySys == 0:
			return "" // direct: no relay
		case !c.hasCalls:
			return "–"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	switches := func(c txCost, v float64, relay bool) string {
		if relay && c.relayUser+c.relaySys == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, s := range r.steps() {
		for _, t := range r.Targets {
			c, n := meanCost(s.runs[t])
			if n == 0 {
				continue
			}
			relayUser, relaySys := us(c.relayUser), us(c.relaySys)
			if c.relayUser+c.relaySys == 0 {
				relayUser, relaySys = "", ""
			}
			rows = append(rows, []string{s.wl, strconv.Itoa(s.n), t, formatThousands(c.tps), us(c.machine),
				relayUser, relaySys, us(c.server), us(c.client), us(c.rest), us(c.irq),
				calls(c, c.relayCalls, true), calls(c, c.serverCalls, false), calls(c, c.clientCalls, false),
				switches(c, c.relaySwitches, true), switches(c, c.serverSwitches, false)})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	b.WriteString("\nWhere a transaction's CPU goes (µs of CPU per transaction, the mean of the rounds: the machine's busy time " +
		"from /proc/stat, the processes' utime and stime; rest: the machine less the processes, the other targets' idle processes " +
		"and the kernel's work charged to no process watched; irq+softirq: interrupt time, mostly loopback's packet delivery, " +
		"which the kernel also charges to the process it interrupted (its system time), so it is within the columns before it; calls/stmt: system calls per statement counted by perf stat " +
		"(--count-syscalls; – when not counted); switches/stmt: the process's context switches per statement):\n\n")
	if err := renderMarkdownAligned(b, peersCostHeader, rows, "lrl"); err != nil {
		return fmt.Errorf("bench: peers: %w", err)
	}
	return nil
}
