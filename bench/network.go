package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
	"github.com/tpproxy/tpproxy/bench/internal/tiers"
	"github.com/tpproxy/tpproxy/internal/sandbox"
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

// NetworkAvailable says why a delayed network cannot be built here (nil
// when it can): it needs root, ip netns and nsenter.
func NetworkAvailable() error { return tiers.Available() }

// startNetwork builds a delayed network's tiers and says where things are.
func startNetwork(ctx context.Context, delay time.Duration, out io.Writer) (*tiers.Tiers, error) {
	t, err := tiers.Setup(ctx, tiers.Config{Delay: delay})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "network %s: server at %s, relays at %s (server at %s from there), %s each way by %s\n",
		tiers.Label(delay), t.ServerHost, t.ProxyHost, t.ServerFromProxy, delay, t.Mechanism)
	return t, nil
}

// inServerNS places a sandbox server in the tiers' server namespace, on
// its address there, with root's TCP account for the load's address.
func inServerNS(o sandbox.Options, t *tiers.Tiers) sandbox.Options {
	o.NetNS, o.Host, o.RootHost = t.ServerNS, t.ServerHost, t.DriverHost
	return o
}

// MaybeRunDelayer turns this process into the NFQUEUE delayer of a
// delayed network when it was started as one (tpbench re-executes itself
// for that); otherwise it returns at once. Call it first in main.
func MaybeRunDelayer() { tiers.MaybeRunDelayer() }

// probeConnects is how many TCP connects measure a link's round trip.
const probeConnects = 100

// netRun is what a benchmark over a delayed network measures of the
// network itself: the links' round trips before the runs, the delayer's
// CPU over them, and that the delay held to the end.
type netRun struct {
	net     *tiers.Tiers
	info    NetworkInfo
	note    string
	delayer sysstat.ProcSample
}

// startNetRun measures the links' round trips (TCP connects to the server
// and to tpproxy from the driver, and to the server from the relays'
// namespace) and refuses a network that does not delay.
func startNetRun(ctx context.Context, net *tiers.Tiers, serverAddr string, peers *peerSet) (*netRun, error) {
	_, port, _ := strings.Cut(serverAddr, ":")
	probes := []struct{ name, ns, addr string }{
		{"driver-server", "", serverAddr},
		{"driver-tpproxy", "", peers.proxy.Addr},
		{"tpproxy-server", net.ProxyNS, net.ServerFromProxy + ":" + port},
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	r := &netRun{net: net, info: NetworkInfo{Label: tiers.Label(net.Delay), DelayUs: us(net.Delay), Mechanism: net.Mechanism}}
	var parts []string
	for _, p := range probes {
		rtt, err := tiers.ProbeRTT(ctx, p.ns, p.addr, probeConnects)
		if err != nil {
			return nil, err
		}
		l := LinkRTT{Link: p.name, Samples: rtt.N, MinUs: us(rtt.Min), P50Us: us(rtt.P50), P99Us: us(rtt.P99)}
		r.info.RTT = append(r.info.RTT, l)
		parts = append(parts, fmt.Sprintf("%s min %.0f / p50 %.0f / p99 %.0f µs", l.Link, l.MinUs, l.P50Us, l.P99Us))
		if l.MinUs < 2*r.info.DelayUs {
			return nil, fmt.Errorf("bench: the %s network does not delay: a %s round trip took %.0f µs, less than twice %.0f µs", r.info.Label, l.Link, l.MinUs, r.info.DelayUs)
		}
	}
	r.note = fmt.Sprintf("Network %s: the servers run in network namespace %s, tpproxy and haproxy in %s, the load here; every link delays each direction by %s (%s). "+
		"Measured TCP connect round trips (%d each): %s.", r.info.Label, net.ServerNS, net.ProxyNS, net.Delay, net.Mechanism, probeConnects, strings.Join(parts, "; "))
	return r, nil
}

// begin marks the start of the runs.
func (r *netRun) begin() {
	if pid := r.net.DelayerPID(); pid != 0 {
		r.delayer, _ = sysstat.ReadProc(pid)
	}
}

// end checks that the delay held over the runs (figures over a network
// whose delayer died would be loopback's) and says what the delayer cost.
func (r *netRun) end() (string, error) {
	if err := r.net.Alive(); err != nil {
		return "", fmt.Errorf("bench: the %s network stopped delaying during the runs: %w", r.info.Label, err)
	}
	if r.delayer.PID == 0 {
		return "", nil
	}
	end, err := sysstat.ReadProc(r.delayer.PID)
	if err != nil {
		return "", nil
	}
	u := sysstat.ProcDelta(r.delayer, end)
	r.info.DelayerCPUSec = u.CPUPct / 100 * u.Seconds
	return fmt.Sprintf("Network %s: the NFQUEUE delayer process used %.1f s of CPU over these runs (%.0f%% of one CPU on average), beside the load, the relays and the servers; "+
		"that includes the kernel's delivery of the packets it lets go (TCP receive, waking the reader), which without it runs in the sender's context.",
		r.info.Label, r.info.DelayerCPUSec, u.CPUPct), nil
}
