// Package tiers gives a benchmark a network between its tiers instead of
// loopback: the server and the proxies run in network namespaces of their
// own, joined to the load (which stays in the caller's namespace) and to
// each other by veth pairs whose every direction is delayed by the same
// one-way delay, as between hosts a fraction of a millisecond apart.
//
//	driver (this namespace) --A-- server namespace
//	driver (this namespace) --B-- proxy namespace --C-- server namespace
//
// The delay is a netem qdisc on each end of each link where the kernel has
// sch_netem; where it has not (kernels without CONFIG_NET_SCH_NETEM), a
// delayer process of tpbench's own holds every packet crossing a link in
// an NFQUEUE for the delay and then lets it through. Its rules live only
// inside the two namespaces: nothing in the caller's namespace but the
// links' two veth ends changes. Only root can do this; Available says why
// not. Close (and, for a run that died, the next Setup) removes all of it.
package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrUnavailable means this machine or user cannot build tiers.
var ErrUnavailable = errors.New("tiers: unavailable")

// The two mechanisms that delay packets.
const (
	MechanismNetem   = "netem"
	MechanismNFQueue = "nfqueue"
)

// namePrefix starts every namespace and interface this package makes.
const namePrefix = "tpb"

// Config configures Setup.
type Config struct {
	// Delay is the one-way delay on every link, in each direction.
	Delay time.Duration
	// Mechanism forces MechanismNetem or MechanismNFQueue; empty picks
	// netem when the kernel has it.
	Mechanism string
}

// Tiers is a running set of namespaces and links.
type Tiers struct {
	// Delay is the one-way delay on each link, Mechanism what delays.
	Delay     time.Duration
	Mechanism string
	// ServerNS and ProxyNS are the namespaces' names (ip netns).
	ServerNS, ProxyNS string
	// ServerHost is the server's address from the driver (link A),
	// ProxyHost the proxy namespace's from the driver (link B), and
	// ServerFromProxy the server's from the proxy namespace (link C).
	ServerHost, ProxyHost, ServerFromProxy string
	// DriverHost is the driver's address on link A: where the server sees
	// the driver's connections come from.
	DriverHost string

	links      []string // root-side veth ends
	delayer    *exec.Cmd
	delayed    chan struct{}
	delayErr   error
	closed     sync.Once
	closedDone bool
	closeErr   error
}

// DelayerPID is the NFQUEUE delayer process's pid (0 with netem).
func (t *Tiers) DelayerPID() int {
	if t.delayer == nil || t.delayer.Process == nil {
		return 0
	}
	return t.delayer.Process.Pid
}

// Alive reports whether the delay still works: an error once the delayer
// has exited (packets then pass undelayed) or the tiers are closed.
func (t *Tiers) Alive() error {
	if t.delayed == nil {
		if t.closedDone {
			return errors.New("tiers: closed")
		}
		return nil // netem: the kernel's
	}
	select {
	case <-t.delayed:
		return fmt.Errorf("tiers: the delayer (pid %d) exited: %v", t.DelayerPID(), t.delayErr)
	default:
		return nil
	}
}

// Available reports why tiers cannot be built here (nil when they can).
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: network namespaces need root (running as uid %d)", ErrUnavailable, os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command (iproute2): %w", ErrUnavailable, err)
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("%w: ip netns: %v: %s", ErrUnavailable, err, bytes.TrimSpace(out))
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return fmt.Errorf("%w: no nsenter (util-linux): %w", ErrUnavailable, err)
	}
	return nil
}

// Label names a delay as reports show it: "0.2ms".
func Label(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + "ms"
}

// ParseNetwork reads "loopback" (0) or a one-way delay such as "0.2ms" or
// "200us".
func ParseNetwork(s string) (time.Duration, error) {
	if s == "loopback" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > time.Second {
		return 0, fmt.Errorf("tiers: network %q: want loopback or a one-way delay between 1us and 1s, such as 0.2ms", s)
	}
	return d, nil
}

// Setup builds the namespaces and links and starts the delay. On error
// whatever it built is removed again.
func Setup(ctx context.Context, cfg Config) (_ *Tiers, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if cfg.Delay <= 0 {
		return nil, fmt.Errorf("tiers: delay %s: want a positive one-way delay", cfg.Delay)
	}
	removeStale()
	pid := os.Getpid()
	// 198.18.0.0/15 is for benchmarks (RFC 2544); the third octet keeps
	// concurrent runs apart.
	base := (pid % 60) * 4
	t := &Tiers{
		Delay:           cfg.Delay,
		ServerNS:        fmt.Sprintf("%s%ds", namePrefix, pid),
		ProxyNS:         fmt.Sprintf("%s%dp", namePrefix, pid),
		ServerHost:      fmt.Sprintf("198.18.%d.2", base),
		ProxyHost:       fmt.Sprintf("198.18.%d.2", base+1),
		ServerFromProxy: fmt.Sprintf("198.18.%d.2", base+2),
		DriverHost:      fmt.Sprintf("198.18.%d.1", base),
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.Close())
		}
	}()
	a, b := fmt.Sprintf("%s%da", namePrefix, pid), fmt.Sprintf("%s%db", namePrefix, pid)
	t.links = []string{a, b} // Close skips those not made
	steps := [][]string{
		{"netns", "add", t.ServerNS},
		{"netns", "add", t.ProxyNS},
		// A: driver <-> server.
		{"link", "add", a, "type", "veth", "peer", "name", "eth-d", "netns", t.ServerNS},
		{"addr", "add", t.DriverHost + "/24", "dev", a},
		{"link", "set", a, "up"},
		{"-n", t.ServerNS, "addr", "add", t.ServerHost + "/24", "dev", "eth-d"},
		// B: driver <-> proxy.
		{"link", "add", b, "type", "veth", "peer", "name", "eth-d", "netns", t.ProxyNS},
		{"addr", "add", fmt.Sprintf("198.18.%d.1/24", base+1), "dev", b},
		{"link", "set", b, "up"},
		{"-n", t.ProxyNS, "addr", "add", t.ProxyHost + "/24", "dev", "eth-d"},
		// C: proxy <-> server.
		{"-n", t.ProxyNS, "link", "add", "eth-s", "type", "veth", "peer", "name", "eth-p", "netns", t.ServerNS},
		{"-n", t.ProxyNS, "addr", "add", fmt.Sprintf("198.18.%d.1/24", base+2), "dev", "eth-s"},
		{"-n", t.ServerNS, "addr", "add", t.ServerFromProxy + "/24", "dev", "eth-p"},
	}
	for _, ns := range []string{t.ServerNS, t.ProxyNS} {
		steps = append(steps, []string{"-n", ns, "link", "set", "lo", "up"})
	}
	steps = append(steps,
		[]string{"-n", t.ServerNS, "link", "set", "eth-d", "up"},
		[]string{"-n", t.ServerNS, "link", "set", "eth-p", "up"},
		[]string{"-n", t.ProxyNS, "link", "set", "eth-d", "up"},
		[]string{"-n", t.ProxyNS, "link", "set", "eth-s", "up"})
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return nil, err
		}
	}

	t.Mechanism = cfg.Mechanism
	if t.Mechanism == "" {
		t.Mechanism = MechanismNFQueue
		if netemWorks(ctx, t.ServerNS) {
			t.Mechanism = MechanismNetem
		}
	}
	switch t.Mechanism {
	case MechanismNetem:
		err = t.startNetem(ctx)
	case MechanismNFQueue:
		err = t.startNFQueue(ctx)
	default:
		err = fmt.Errorf("tiers: mechanism %q: want %s or %s", t.Mechanism, MechanismNetem, MechanismNFQueue)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// netemWorks tries a netem qdisc on the server namespace's loopback.
func netemWorks(ctx context.Context, ns string) bool {
	if run(ctx, "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1us") != nil {
		return false
	}
	return run(ctx, "ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "lo", "root") == nil
}

// startNetem delays the egress of both ends of every link.
func (t *Tiers) startNetem(ctx context.Context) error {
	delay := strconv.FormatInt(t.Delay.Microseconds(), 10) + "us"
	qdisc := func(ns, dev string) error {
		args := []string{"qdisc", "add", "dev", dev, "root", "netem", "delay", delay, "limit", "100000"}
		if ns != "" {
			args = append([]string{"netns", "exec", ns, "tc"}, args...)
			return run(ctx, "ip", args...)
		}
		return run(ctx, "tc", args...)
	}
	for _, q := range [][2]string{{"", t.links[0]}, {t.ServerNS, "eth-d"}, {"", t.links[1]}, {t.ProxyNS, "eth-d"}, {t.ProxyNS, "eth-s"}, {t.ServerNS, "eth-p"}} {
		if err := qdisc(q[0], q[1]); err != nil {
			return err
		}
	}
	return nil
}

// iptables is the command that adds the NFQUEUE rules: the legacy
// (xtables) one where installed, since nftables' own queue expression is
// often not built (CONFIG_NFT_QUEUE).
func iptables() (string, error) {
	for _, name := range []string{"iptables-legacy", "iptables"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: the kernel has no netem and there is no iptables for NFQUEUE rules (apt-get install iptables)", ErrUnavailable)
}

// startNFQueue queues every packet crossing a link, in each direction
// once, and starts the delayer that holds them: in each namespace the
// packets arriving from the driver (INPUT) and all that leave (OUTPUT).
// --queue-bypass lets packets through undelayed should the delayer be
// gone, so that a crashed run leaves no black hole.
func (t *Tiers) startNFQueue(ctx context.Context) error {
	ipt, err := iptables()
	if err != nil {
		return err
	}
	rules := map[string][][]string{
		t.ServerNS: {{"INPUT", "-i", "eth-d"}, {"OUTPUT", "-o", "eth-d"}, {"OUTPUT", "-o", "eth-p"}},
		t.ProxyNS:  {{"INPUT", "-i", "eth-d"}, {"OUTPUT", "-o", "eth-d"}, {"OUTPUT", "-o", "eth-s"}},
	}
	for _, ns := range []string{t.ServerNS, t.ProxyNS} {
		for _, r := range rules[ns] {
			args := append([]string{"netns", "exec", ns, ipt, "-A"}, r...)
			args = append(args, "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass")
			if err := run(ctx, "ip", args...); err != nil {
				return err
			}
		}
	}
	return t.startDelayer(ctx)
}

// Close stops the delay and removes the namespaces and links. Processes
// still running in the namespaces should be stopped first.
func (t *Tiers) Close() error {
	t.closed.Do(func() {
		t.closedDone = true
		if t.delayer != nil && t.delayer.Process != nil {
			_ = t.delayer.Process.Kill()
			<-t.delayed
		}
		var errs []error
		for _, ns := range []string{t.ServerNS, t.ProxyNS} {
			if ns != "" {
				errs = append(errs, removeNS(ns))
			}
		}
		for _, l := range t.links {
			errs = append(errs, removeLink(l))
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// removeNS kills what still runs in ns and deletes it.
func removeNS(ns string) error {
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				if p, err := os.FindProcess(pid); err == nil {
					_ = p.Kill()
				}
			}
		}
	}
	return run(context.Background(), "ip", "netns", "del", ns)
}

// removeStale removes the namespaces and links of runs whose process is
// gone (killed before its Close ran).
func removeStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	var stale []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], namePrefix) {
			continue
		}
		name := f[0]
		pid, err := strconv.Atoi(strings.TrimRight(strings.TrimPrefix(name, namePrefix), "sp"))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = removeNS(name)
		stale = append(stale, pid)
	}
	for _, pid := range stale {
		for _, suffix := range []string{"a", "b"} {
			_ = removeLink(fmt.Sprintf("%s%d%s", namePrefix, pid, suffix))
		}
	}
}

// removeLink deletes a veth end in this namespace unless it goes by
// itself: deleting a namespace takes its veth ends along and their peers
// here with them, but the kernel does that asynchronously. One still
// there after a second (a process held the namespace) is deleted; one
// that vanishes meanwhile is no error.
func removeLink(name string) error {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := net.InterfaceByName(name); err != nil {
			return nil
		}
	}
	err := run(context.Background(), "ip", "link", "del", name)
	if _, lerr := net.InterfaceByName(name); lerr != nil {
		return nil // gone, by us or by the kernel
	}
	return err
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// Command is bin with args to run in namespace ns (ServerNS or ProxyNS):
// nsenter execs it, so the process keeps nsenter's pid.
func Command(ns, bin string, args ...string) (string, []string) {
	return "nsenter", append([]string{"--net=" + filepath.Join("/run/netns", ns), "--", bin}, args...)
}

// run runs a command, its output in the error.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tiers: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
