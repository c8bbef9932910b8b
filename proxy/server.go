// Package proxy is tpproxy's front end: it accepts MySQL client
// connections, authenticates them, and serves each session in one
// goroutine that runs its statements on shared backend connections from
// package pool, after admission by package scheduler. Session state is
// tracked and replayed so that no client can tell it shares connections,
// and a session is pinned to one connection while it holds state that
// cannot be replayed (transactions, locks, user variables...).
package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tpproxy/tpproxy/internal/histogram"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/netx"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy/internal/catalog"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Config configures a Server.
type Config struct {
	// MaxClientConnections bounds concurrent client sessions; beyond it
	// clients get ERR 1040. Default 10000.
	MaxClientConnections int
	// MaxAllowedPacket is the largest client packet accepted. 0 takes the
	// backend's max_allowed_packet (64 MiB until it is known), which is the
	// value clients read from @@max_allowed_packet.
	MaxAllowedPacket int
	// MaxBufferMemory bounds the memory all sessions' packet buffers hold
	// beyond their resident ones (0: no bound); past it, reads wait.
	MaxBufferMemory int64
	// MaxPinned bounds the backend connections pinned sessions hold in
	// all (max_pinned_connections), MaxPinnedPerAccount those of each
	// account's sessions (max_pinned_per_account), MaxStickyPinned those
	// of sessions pinned for good by state tpproxy cannot replay
	// (max_sticky_pinned). 0 is automatic: every connection but a reserve
	// of min(thread groups, pool size - 1) for unpinned work, per account
	// the same as in all, and for good half of that (at least 1).
	// SetPinLimits changes them.
	MaxPinned, MaxPinnedPerAccount, MaxStickyPinned int
	// ServerVersion is announced to clients; "" means the backend's own.
	ServerVersion string
	// AuthPlugin is the plugin announced in the handshake:
	// mysql_native_password (default) or caching_sha2_password. Both are
	// accepted whatever is announced.
	AuthPlugin string
	// LoadDataLocal allows LOAD DATA LOCAL INFILE to be relayed.
	LoadDataLocal bool
	// Users may log in.
	Users []User
	// Identity says which server account sessions run as (default
	// IdentityPassthrough: each user's own).
	Identity Identity
	// RequireSecureTransport refuses clients that do not switch to TLS
	// (unix socket clients excepted), as the server's
	// require_secure_transport does.
	RequireSecureTransport bool
	// AuthLookup, when set, is asked for the hash of a user that Users
	// does not list (PgBouncer's auth_query): the user may log in with the
	// server account's own password, and runs as that account. Answers are
	// cached for AuthLookupTTL (default 1 minute): a password changed on
	// the server takes effect after at most that long.
	AuthLookup    HashLookup
	AuthLookupTTL time.Duration
	// MaxConnectErrors is how many failed logins a client address may
	// have since its last successful one before its connections get ERR
	// 1129 until FLUSH HOSTS; 0 turns the limit off.
	MaxConnectErrors int
	// TLS, when set, lets clients switch to TLS.
	TLS *tls.Config
	// SlowQueue is the queue wait from which a statement is logged as a
	// "slow queue" warning; 0 turns the log off. SetSlowQueue changes it.
	SlowQueue time.Duration
	// StatementCacheSize is how many prepared statements that no session
	// holds any more stay cached for the next PREPARE of the same text.
	// Statements sessions hold are always cached. Default 4096.
	StatementCacheSize int
	// CatalogTTL is how long what tpproxy learnt from the server about
	// statements and schema objects stays trusted: a PREPARE the server
	// accepted, and which routines, triggers, views and column defaults
	// may leave session state. DDL run through tpproxy invalidates it at
	// once; changes made on the server directly are seen after at most
	// this long. Default 1s; negative means ask the server every time.
	CatalogTTL time.Duration
	// Logger receives session events. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.MaxClientConnections <= 0 {
		c.MaxClientConnections = 10000
	}
	if c.MaxAllowedPacket < 0 {
		return fmt.Errorf("proxy: max_allowed_packet %d < 0", c.MaxAllowedPacket)
	}
	switch c.AuthPlugin {
	case "":
		c.AuthPlugin = pluginNative
	case pluginNative, pluginCachingSHA2:
	default:
		return fmt.Errorf("proxy: unsupported auth plugin %q", c.AuthPlugin)
	}
	if c.StatementCacheSize <= 0 {
		c.StatementCacheSize = defaultStatementCache
	}
	if c.CatalogTTL == 0 {
		c.CatalogTTL = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// clientBufSize is the size of the buffers a session borrows while a
// command is in flight; idle sessions hold only a small read buffer.
const clientBufSize = 16 << 10

// smallBufSize is a session's resident read buffer: enough for typical
// commands, small enough for tens of thousands of idle sessions.
const smallBufSize = 512

// Server accepts client connections and serves them.
type Server struct {
	cfg   Config
	pool  *pool.Pool
	sched *scheduler.Scheduler
	log   *slog.Logger

	users atomic.Pointer[userStore]
	rsa   rsaKeys
	// auth bounds the CPU of handshakes' private-key operations; tls is
	// cfg.TLS with its handshakes under that bound (nil: no TLS).
	auth *authWork
	tls  *tls.Config
	bufs *mysqlwire.BufferPool
	// budget bounds what all sessions' readers hold beyond their resident
	// buffers (max_buffer_memory).
	budget *mysqlwire.Budget
	// pins bounds the backend connections pinned sessions hold.
	pins  pinBudget
	chars charsets

	// poll holds parked sessions (see parkAfter), started on first use.
	poll     *poller
	pollOnce sync.Once

	lastID atomic.Uint32
	// nextOwner numbers session states (pool.State.Owner) without reuse.
	nextOwner atomic.Uint64
	// maxPacket is the max_allowed_packet sessions enforce.
	maxPacket atomic.Int64
	// backendVer caches the backend's version string once known.
	backendVer atomic.Pointer[string]
	// ddlGen counts statements that may have changed schema objects or
	// privileges (DDL, GRANT, CALL, ...); caches of what the server
	// answered are trusted only within one generation.
	ddlGen atomic.Uint64
	// catalog knows the schema objects that may leave session state.
	catalog *catalog.Catalog
	// hosts counts failed logins by client address (max_connect_errors).
	hosts *hostGuard
	// lookup finds users Users does not list on the server (nil: off).
	lookup *lookupCache

	// mu guards sessions and listeners.
	mu        sync.Mutex
	sessions  map[uint32]*Session
	listeners []net.Listener
	extras    []*extraPort
	closed    bool

	wg      sync.WaitGroup
	stats   serverCounters
	metrics metricCounters

	// maxClients is MaxClientConnections, changeable at runtime.
	maxClients atomic.Int64
	// slowQueue is the slow queue threshold in nanoseconds (0: off).
	slowQueue atomic.Int64
	slowLog   slowQueueLog
	// draining is set by Shutdown: sessions end as soon as they hold no
	// transaction, and COM_PING answers ERR 1053.
	draining atomic.Bool
	// retiring is set by Retire: a new process took the listeners; idle
	// sessions end, busy ones go on.
	retiring atomic.Bool

	stmtCache *stmtCache

	stopReaper context.CancelFunc
}

// New returns a server that runs statements on p after admission by s.
func New(cfg Config, p *pool.Pool, s *scheduler.Scheduler) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	srv := &Server{
		cfg:      cfg,
		pool:     p,
		sched:    s,
		log:      cfg.Logger,
		bufs:     mysqlwire.NewBufferPool(clientBufSize),
		budget:   mysqlwire.NewBudget(cfg.MaxBufferMemory),
		sessions: make(map[uint32]*Session),
		auth:     newAuthWork(authSlots()),
	}
	srv.tls = gatedTLSConfig(cfg.TLS)
	srv.stmtCache = newStmtCache(cfg.StatementCacheSize)
	srv.catalog = catalog.New(cfg.CatalogTTL)
	srv.metrics.duration = histogram.New(nil)
	srv.maxClients.Store(int64(cfg.MaxClientConnections))
	srv.pins.max.Store(int64(cfg.MaxPinned))
	srv.pins.perAccount.Store(int64(cfg.MaxPinnedPerAccount))
	srv.pins.sticky.Store(int64(cfg.MaxStickyPinned))
	srv.pins.lend = p.Lend
	srv.slowQueue.Store(int64(cfg.SlowQueue))
	srv.chars.init(p.Config().Collation)
	srv.maxPacket.Store(int64(cfg.MaxAllowedPacket))
	if cfg.MaxAllowedPacket == 0 {
		srv.maxPacket.Store(defaultMaxPacket)
		srv.learnMaxPacket()
	}
	srv.users.Store(newUserStore(cfg.Users, cfg.Identity))
	srv.hosts = newHostGuard(cfg.MaxConnectErrors)
	if cfg.AuthLookup != nil {
		srv.lookup = newLookupCache(cfg.AuthLookup, cfg.AuthLookupTTL, cfg.Identity)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv.stopReaper = cancel
	go srv.reaper(ctx)
	return srv, nil
}

// SetUsers replaces the accounts that may log in; sessions already logged
// in are not affected.
func (srv *Server) SetUsers(users []User) { srv.users.Store(newUserStore(users, srv.cfg.Identity)) }

// extraPort is a second client port (thread_pool.extra_port): its
// sessions bypass admission and use a few reserved backend connections,
// so an operator can always get in.
type extraPort struct {
	pool *pool.Pool
	max  int
	n    int // sessions now; guarded by Server.mu
}

// Serve accepts connections on ln until ctx ends or Close is called.
func (srv *Server) Serve(ctx context.Context, ln net.Listener) error {
	return srv.serve(ctx, ln, nil)
}

// ServeExtra serves the extra port on ln: at most maxConns sessions, which
// bypass the scheduler and run on p's connections (a small pool of its own).
func (srv *Server) ServeExtra(ctx context.Context, ln net.Listener, p *pool.Pool, maxConns int) error {
	return srv.serve(ctx, ln, &extraPort{pool: p, max: max(maxConns, 1)})
}

func (srv *Server) serve(ctx context.Context, ln net.Listener, extra *extraPort) error {
	srv.mu.Lock()
	if srv.closed || srv.draining.Load() {
		srv.mu.Unlock()
		_ = ln.Close()
		return net.ErrClosed
	}
	srv.listeners = append(srv.listeners, ln)
	if extra != nil {
		srv.extras = append(srv.extras, extra)
	}
	srv.mu.Unlock()
	return netx.AcceptLoop(ctx, ln, srv.log, func(nc net.Conn) {
		srv.stats.accepted.Add(1)
		srv.wg.Add(1)
		go srv.serveConn(ctx, nc, extra)
	})
}

// serveConn runs one client connection from handshake to teardown.
func (srv *Server) serveConn(ctx context.Context, nc net.Conn, extra *extraPort) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	nc = &countingConn{Conn: netx.NewParkable(nc), in: &srv.metrics.bytesIn, out: &srv.metrics.bytesOut}
	s := newSession(srv, nc, extra)
	if srv.hosts.blocked(s.remoteHost()) {
		srv.metrics.rejected[RejectHostBlocked].Add(1)
		srv.wg.Done()
		s.reject(errHostBlocked(s.remoteHost()))
		return
	}
	if reason, ok := srv.register(s); !ok {
		srv.metrics.rejected[reason].Add(1)
		defer srv.wg.Done()
		if reason == RejectShuttingDown {
			s.reject(errShuttingDown)
			return
		}
		srv.stats.rejected.Add(1)
		s.reject(errTooManyConnections)
		return
	}
	srv.serveSession(s, func() bool { return s.run(ctx) })
}

// serveSession runs step, the session's goroutine's work; when the
// session parks, a new goroutine waits for its client and goes on
// (resume), and this one ends. When it ends, the session is removed.
func (srv *Server) serveSession(s *Session, step func() bool) {
	if step() {
		if p := srv.parkPoller(); p == nil || !p.add(s) {
			go srv.resume(s, true)
		} else if srv.draining.Load() {
			// Shutdown's wakeIdle may have looked for the session before
			// the poller had it: wake it now (unpark takes it only once).
			srv.unpark(s)
		}
		return
	}
	srv.unregister(s)
	srv.wg.Done()
}

// register adds a session unless the connection limit is reached or the
// server is shutting down.
func (srv *Server) register(s *Session) (RejectReason, bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed || srv.draining.Load() {
		return RejectShuttingDown, false
	}
	if x := s.extra; x != nil {
		if x.n >= x.max {
			return RejectExtraPortFull, false
		}
		x.n++
	} else if int64(len(srv.sessions)-srv.extraSessions()) >= srv.maxClients.Load() {
		return RejectMaxConnections, false
	}
	srv.sessions[s.id] = s
	return 0, true
}

// SetMaxClientConnections changes the session limit for new connections;
// sessions over a lowered limit stay connected.
func (srv *Server) SetMaxClientConnections(n int) {
	if n > 0 {
		srv.maxClients.Store(int64(n))
	}
}

// SetSlowQueue changes the slow queue log threshold (0: off).
func (srv *Server) SetSlowQueue(d time.Duration) { srv.slowQueue.Store(int64(max(d, 0))) }

// extraSessions counts the extra port's sessions; mu is held.
func (srv *Server) extraSessions() int {
	n := 0
	for _, x := range srv.extras {
		n += x.n
	}
	return n
}

func (srv *Server) unregister(s *Session) {
	srv.mu.Lock()
	delete(srv.sessions, s.id)
	if s.extra != nil {
		s.extra.n--
	}
	srv.mu.Unlock()
}

// session looks up a live session by its connection id.
func (srv *Server) session(id uint32) *Session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.sessions[id]
}

// nextID hands out connection ids; 0 is never used.
func (srv *Server) nextID() uint32 {
	for {
		id := srv.lastID.Add(1)
		if id != 0 && srv.session(id) == nil {
			return id
		}
	}
}

// Close stops accepting, closes every client connection, and waits for the
// sessions to finish their teardown (which returns backend connections).
func (srv *Server) Close() {
	srv.mu.Lock()
	srv.closed = true
	for _, ln := range srv.listeners {
		_ = ln.Close()
	}
	sessions := make([]*Session, 0, len(srv.sessions))
	for _, s := range srv.sessions {
		sessions = append(sessions, s)
	}
	srv.mu.Unlock()
	for _, s := range sessions {
		s.closeConn()
	}
	srv.wg.Wait()
	srv.stopReaper()
	if p := srv.parkPoller(); p != nil {
		p.close()
	}
}

// defaultMaxPacket is enforced until the backend's value is known.
const defaultMaxPacket = 64 << 20

// learnMaxPacket adopts the backend's max_allowed_packet, so that what the
// proxy enforces is what clients read from @@max_allowed_packet.
func (srv *Server) learnMaxPacket() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := srv.pool.Acquire(ctx, nil)
	if err != nil {
		srv.log.Warn("could not read the backend's max_allowed_packet; using 64 MiB", "err", err)
		return
	}
	defer srv.pool.Release(c)
	var v int64
	err = c.Query(ctx, "SELECT @@GLOBAL.max_allowed_packet", func(row []byte) error {
		b, _, err := mysqlwire.LenEncString(row)
		if err == nil {
			v, err = strconv.ParseInt(string(b), 10, 64)
		}
		return err
	})
	if err != nil || v <= 0 {
		srv.log.Warn("could not read the backend's max_allowed_packet; using 64 MiB", "err", err)
		return
	}
	srv.maxPacket.Store(v)
}

// maxPacketOf is the max_allowed_packet a session starting now gets: the
// configured one, else the backend's current global value.
func (srv *Server) maxPacketOf(p *pool.Pool) int64 {
	if srv.cfg.MaxAllowedPacket > 0 {
		return int64(srv.cfg.MaxAllowedPacket)
	}
	if v, ok := p.Globals().Value("max_allowed_packet"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return srv.maxPacket.Load()
}

// serverVersion is what clients are told the server is.
func (srv *Server) serverVersion() string {
	if srv.cfg.ServerVersion != "" {
		return srv.cfg.ServerVersion
	}
	if v := srv.pool.ServerVersion(); v != "" {
		return v
	}
	return "8.0.36-tpproxy"
}

// backendVersion is the backend server's own version string ("" until a
// connection has been made), which decides how it lexes statements.
func (srv *Server) backendVersion() string {
	if v := srv.backendVer.Load(); v != nil {
		return *v
	}
	v := srv.pool.ServerVersion()
	if v != "" {
		srv.backendVer.Store(&v)
	}
	return v
}

// serverCounters are the front end's event counts.
type serverCounters struct {
	accepted     atomic.Uint64
	rejected     atomic.Uint64
	authFailures atomic.Uint64
	statements   atomic.Uint64
	errors       atomic.Uint64
	pins         atomic.Uint64
	clientStmts  atomic.Int64
	reprepares   atomic.Uint64
	// catalogFailures counts statements the catalog could not judge.
	catalogFailures atomic.Uint64
}

// Stats is a snapshot of the front end.
type Stats struct {
	Sessions     int
	Pinned       int
	Accepted     uint64
	Rejected     uint64 // over max_client_connections
	AuthFailures uint64
	Statements   uint64
	Errors       uint64 // statements answered with ERR
	Pins         uint64 // times a session got pinned

	ClientStatements int64  // prepared statements sessions hold open
	CachedStatements int    // distinct statements in the statement cache
	Reprepares       uint64 // executes retried after the server asked to prepare again
	CatalogFailures  uint64 // statements the catalog could not judge (they counted as stateful)

	BufferBytes int64 // sessions' packet buffers beyond their resident ones
	BufferLimit int64 // max_buffer_memory (0: none)
}

// Stats returns a snapshot of the front end.
func (srv *Server) Stats() Stats {
	srv.mu.Lock()
	st := Stats{Sessions: len(srv.sessions)}
	for _, s := range srv.sessions {
		if s.pinsNow.Load() != 0 {
			st.Pinned++
		}
	}
	srv.mu.Unlock()
	st.Accepted = srv.stats.accepted.Load()
	st.Rejected = srv.stats.rejected.Load()
	st.AuthFailures = srv.stats.authFailures.Load()
	st.Statements = srv.stats.statements.Load()
	st.Errors = srv.stats.errors.Load()
	st.Pins = srv.stats.pins.Load()
	st.ClientStatements = srv.stats.clientStmts.Load()
	st.CachedStatements = srv.stmtCache.len()
	st.Reprepares = srv.stats.reprepares.Load()
	st.CatalogFailures = srv.stats.catalogFailures.Load()
	st.BufferBytes, st.BufferLimit = srv.BufferMemory()
	return st
}
