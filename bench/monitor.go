package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/bench/internal/sysstat"
)

// MonitorConfig says what a ramp watches besides its clients.
type MonitorConfig struct {
	// NodeExporter is the URL of a node_exporter on the database host
	// (http://db:9100/metrics): host figures come from there instead of
	// the local /proc.
	NodeExporter string
	// ProxyAdmin maps target names to tpproxy admin-port DSNs: the step
	// results of those targets get the proxy's own figures (ProxyStep).
	ProxyAdmin map[string]string
	// RelayPID maps target names to the process id of their relay (the
	// proxy in front of the server), for a relay that cannot be found by
	// the TCP port it listens on: a unix socket, another network
	// namespace. Other targets on a loopback address are looked up by port
	// ("auto").
	RelayPID map[string]int
	// ServerPID is the server's process id and TargetServerPID that of
	// each target with a server of its own (Target.ServerDSN), for
	// servers that cannot be found by the port they listen on (in
	// another network namespace). Zero: looked up by port.
	ServerPID       int
	TargetServerPID map[string]int
}

// ErrNoRelayProcess means a RelayPID names no running process.
var ErrNoRelayProcess = errors.New("bench: no such relay process")

// monitor takes the host, process and proxy readings at the start and
// end of every hold. It is built once per ramp.
type monitor struct {
	host  sysstat.Host
	procs []watchedProc
	admin map[string]*proxyAdmin
	log   *slog.Logger
}

// watchedProc is a local process found by the port it listens on or
// named by MonitorConfig.RelayPID.
type watchedProc struct {
	role string // "server" or a target's name
	kind string // ProcServer or ProcRelay
	pid  int
}

// newMonitor resolves what cfg and the targets allow: the host source,
// the local server and relay processes (by listening port, for targets on
// a loopback address, or cfg.RelayPID), and the proxies' admin ports.
func newMonitor(ctx context.Context, cfg MonitorConfig, serverDSN string, targets []Target, log *slog.Logger) (*monitor, error) {
	m := &monitor{admin: map[string]*proxyAdmin{}, log: log}
	if cfg.NodeExporter != "" {
		m.host = sysstat.NodeExporter(cfg.NodeExporter, &http.Client{Timeout: 10 * time.Second})
		if _, err := m.host.Sample(ctx); err != nil {
			return nil, fmt.Errorf("bench: --node-exporter: %w", err)
		}
	} else {
		m.host = sysstat.LocalHost()
		if _, err := m.host.Sample(ctx); err != nil {
			log.Warn("no host figures", "err", err)
			m.host = nil
		}
	}
	watched := map[int]bool{}
	watch := func(role, kind string, pid int) {
		if !watched[pid] {
			watched[pid] = true
			m.procs = append(m.procs, watchedProc{role: role, kind: kind, pid: pid})
		}
	}
	if serverDSN == "" && len(targets) > 0 {
		serverDSN = targets[0].DSN // the first target is the server itself by convention
	}
	listener := func(dsn string) (port, pid int) {
		port, ok := localPort(dsn)
		if !ok {
			return 0, 0
		}
		pid, err := sysstat.ListenerPID(port)
		if err != nil {
			return port, 0
		}
		return port, pid
	}
	serverPort, pid := listener(serverDSN)
	if cfg.ServerPID != 0 {
		pid = cfg.ServerPID
	}
	if pid != 0 {
		watch("server", ProcServer, pid)
	}
	for _, t := range targets {
		ownPort := serverPort
		if t.ServerDSN != "" {
			var pid int
			ownPort, pid = listener(t.ServerDSN)
			if p := cfg.TargetServerPID[t.Name]; p != 0 {
				pid = p
			}
			if pid != 0 {
				watch(t.Name, ProcServer, pid)
			}
		}
		if pid, ok := cfg.RelayPID[t.Name]; ok {
			if _, err := sysstat.ReadProc(pid); err != nil {
				return nil, fmt.Errorf("%w: --relay-pid %s=%d: %w", ErrNoRelayProcess, t.Name, pid, err)
			}
			watch(t.Name, ProcRelay, pid)
			continue
		}
		port, pid := listener(t.DSN)
		if pid != 0 && port != serverPort && port != ownPort {
			watch(t.Name, ProcRelay, pid)
		}
	}
	for name, dsn := range cfg.ProxyAdmin {
		a, err := openProxyAdmin(dsn)
		if err == nil {
			_, err = a.status(ctx)
		}
		if err != nil {
			m.close()
			return nil, fmt.Errorf("bench: proxy admin of %s: %w", name, err)
		}
		m.admin[name] = a
	}
	return m, nil
}

func (m *monitor) close() {
	for _, a := range m.admin {
		a.close()
	}
}

// localPort returns the TCP port of a DSN whose host is a loopback
// address: only then is a process listening on that port the target.
func localPort(dsn string) (int, bool) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Net != "tcp" {
		return 0, false
	}
	host, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, false
	}
	if host == "localhost" {
		return port, true
	}
	ip := net.ParseIP(host)
	return port, ip != nil && ip.IsLoopback()
}

// holdReading is a monitor's reading at the start of a hold.
type holdReading struct {
	host    sysstat.HostSample
	hostOK  bool
	procs   map[int]sysstat.ProcSample
	proxy   map[string]int64
	proxyOK bool
}

// begin reads everything at the start of target's hold.
func (m *monitor) begin(ctx context.Context, target string) *holdReading {
	r := &holdReading{procs: map[int]sysstat.ProcSample{}}
	if m.host != nil {
		s, err := m.host.Sample(ctx)
		if err != nil {
			m.log.Warn("host sample at the start of the hold", "err", err)
		}
		r.host, r.hostOK = s, err == nil
	}
	for _, p := range m.procs {
		if s, err := sysstat.ReadProc(p.pid); err == nil {
			r.procs[p.pid] = s
		}
	}
	if a := m.admin[target]; a != nil {
		st, err := a.status(ctx)
		if err != nil {
			m.log.Warn("proxy status at the start of the hold", "err", err)
		}
		r.proxy, r.proxyOK = st, err == nil
	}
	return r
}

// end reads everything again and fills res's Host, Processes and Proxy.
func (m *monitor) end(ctx context.Context, target string, r *holdReading, res *StepResult) {
	if r.hostOK {
		s, err := m.host.Sample(ctx)
		if err != nil {
			m.log.Warn("host sample at the end of the hold", "err", err)
		} else {
			u := sysstat.Usage(r.host, s)
			res.Host = &HostUsage{
				CPUBusyPct: u.CPUPct, IOWaitPct: u.IOWaitPct, CtxSwitchesPerSec: u.ContextSwitchesPerSec,
				MemUsedPct: u.MemUsedPct, NetRxBps: u.NetRxBps, NetTxBps: u.NetTxBps, NetPct: u.NetPct,
				LoBps: u.LoBps, Source: s.Source,
			}
		}
	}
	for _, p := range m.procs {
		a, ok := r.procs[p.pid]
		if !ok {
			continue
		}
		b, err := sysstat.ReadProc(p.pid)
		if err != nil {
			if !errors.Is(err, sysstat.ErrNoProcess) {
				m.log.Warn("process sample", "pid", p.pid, "err", err)
			}
			continue
		}
		u := sysstat.ProcDelta(a, b)
		res.Processes = append(res.Processes, ProcessUsage{
			Role: p.role, Kind: p.kind, PID: p.pid, Name: b.Name, CPUPct: u.CPUPct,
			CPUSec:            u.CPUPct * u.Seconds / 100,
			CtxSwitchesPerSec: u.CtxPerSec, RSSBytes: u.RSS, Threads: u.Threads,
		})
	}
	if r.proxyOK {
		st, err := m.admin[target].status(ctx)
		if err != nil {
			m.log.Warn("proxy status at the end of the hold", "err", err)
			return
		}
		d := proxyDelta(r.proxy, st)
		res.Proxy = &d
	}
}
