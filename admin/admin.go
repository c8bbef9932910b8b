// Package admin serves tpproxy's admin port: a MySQL-protocol listener on
// which an operator reads and changes the thread pool with the statements
// MariaDB has for its own (SHOW VARIABLES, SET GLOBAL thread_pool_*, the
// information_schema.THREAD_POOL_* tables), lists and kills the proxy's
// client sessions (SHOW PROCESSLIST, KILL) and reads its counters (SHOW
// STATUS). Any MySQL client can connect: the mariadb and mysql command-line
// tools, go-sql-driver, connectors.
//
// The protocol side is the proxy's own protocol connection
// (proxy.ServeLocal: the same hardened handshake as client sessions); this
// package parses the few statements it answers and reads the scheduler, front end and pool
// through their snapshot methods. Changes go through
// scheduler.Update, one call per SET statement.
package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/autosize"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/internal/netx"
	"github.com/tpproxy/tpproxy/pool"
	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// Config configures a Server.
type Config struct {
	// Listen is the address the admin port listens on (host:port). Serve
	// takes its listener from the caller; Listen is where cmd/ opens it.
	// Default 127.0.0.1:6032.
	Listen string
	// User and Password are the one admin account, checked with
	// mysql_native_password. Default admin/admin.
	User     string
	Password string
	// Logger receives logins, changes and kills. Default slog.Default().
	Logger *slog.Logger
	// Sizer is the pool's automatic sizer, nil for a fixed pool_size
	// (PortAddon takes it from the stack).
	Sizer *autosize.Sizer
}

// Defaults of Config.
const (
	DefaultListen   = "127.0.0.1:6032"
	DefaultUser     = "admin"
	DefaultPassword = "admin"
)

// Validate fills in defaults and checks c.
func (c *Config) Validate() error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("%w: listen %q: %w", ErrBadConfig, c.Listen, err)
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.Password == "" {
		c.Password = DefaultPassword
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Server is the admin port. It holds no state of its own besides its
// connections: every answer is read from the scheduler, front end and pool.
type Server struct {
	cfg   Config
	log   *slog.Logger
	sched *scheduler.Scheduler
	front *proxy.Server
	pool  *pool.Pool

	// lastID is the last connection id given out.
	lastID atomic.Uint32

	// mu guards listeners and closed.
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	closed    bool
	// wg counts running Serve calls, which wait for their connections.
	wg sync.WaitGroup

	// conns counts connections being served, logged in or not.
	conns atomic.Int64

	// engineMu guards engine, the SQL engine of SELECTs over the views,
	// opened at the first.
	engineMu sync.Mutex
	engine   *engine
}

// New returns an admin server over the proxy's scheduler, front end and
// pool. It listens nowhere until Serve.
func New(cfg Config, sched *scheduler.Scheduler, front *proxy.Server, p *pool.Pool) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sched == nil || front == nil || p == nil {
		return nil, fmt.Errorf("%w: scheduler, proxy server and pool are all required", ErrBadConfig)
	}
	a := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		sched:     sched,
		front:     front,
		pool:      p,
		listeners: make(map[net.Listener]struct{}),
	}
	return a, nil
}

// Serve accepts admin connections on ln until ctx ends or Close is called,
// then closes ln and the connections it accepted and waits for them. It
// returns nil then, and net.ErrClosed if the server was already closed.
func (a *Server) Serve(ctx context.Context, ln net.Listener) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		_ = ln.Close()
		return net.ErrClosed
	}
	a.listeners[ln] = struct{}{}
	a.wg.Add(1)
	a.mu.Unlock()
	defer a.wg.Done()

	ctx, cancel := context.WithCancel(ctx)
	var conns sync.WaitGroup
	defer func() {
		cancel() // closes this listener's connections
		conns.Wait()
		a.mu.Lock()
		delete(a.listeners, ln)
		a.mu.Unlock()
	}()
	return netx.AcceptLoop(ctx, ln, a.log, func(nc net.Conn) {
		conns.Go(func() { a.serveConn(ctx, nc) })
	})
}

// Close stops every Serve, closes all admin connections and waits for
// them. It is safe to call more than once.
func (a *Server) Close() {
	a.mu.Lock()
	a.closed = true
	for ln := range a.listeners {
		_ = ln.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	a.engineMu.Lock()
	if a.engine != nil {
		a.engine.close()
		a.engine = nil
	}
	a.engineMu.Unlock()
}

// serveConn runs one admin connection from handshake to teardown, on the
// proxy's protocol connection with the one admin account (no TLS offered,
// mysql_native_password; any other user fails like a wrong password, ERR
// 1045). The connection is closed when ctx ends.
func (a *Server) serveConn(ctx context.Context, nc net.Conn) {
	a.conns.Add(1)
	defer a.conns.Add(-1)
	id := a.lastID.Add(1)
	err := proxy.ServeLocal(ctx, nc, id, proxy.LocalConfig{
		ServerVersion: serverVersion,
		User:          a.cfg.User,
		Password:      a.cfg.Password,
		Handler:       &handler{a: a, id: id, host: hostOf(nc.RemoteAddr())},
		Logger:        a.log,
	})
	a.log.Debug("admin: session ended", "conn_id", id, "err", err)
}

// handler answers one connection's queries.
type handler struct {
	a    *Server
	id   uint32 // the connection id
	host string // the client's address, without the port
}

// hostOf is the host of a client address.
func hostOf(addr net.Addr) string {
	if addr == nil {
		return "localhost"
	}
	h, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return h
}

// Query implements proxy.LocalHandler.
func (h *handler) Query(ctx context.Context, q string) (*proxy.LocalResult, error) {
	res, err := h.a.query(ctx, h, q)
	if err != nil {
		me := toMySQL(err)
		return nil, &mysqlwire.Error{Code: me.Code, State: me.State, Message: me.Message}
	}
	return localResult(res), nil
}

// localResult turns a go-mysql result into the protocol connection's.
func localResult(res *mysql.Result) *proxy.LocalResult {
	if res == nil || res.Resultset == nil {
		var affected uint64
		if res != nil {
			affected = res.AffectedRows
		}
		return &proxy.LocalResult{AffectedRows: affected}
	}
	out := &proxy.LocalResult{Columns: make([]mysqlwire.Column, len(res.Fields))}
	for i, f := range res.Fields {
		out.Columns[i] = mysqlwire.Column{Name: f.Name, Charset: f.Charset, Length: f.ColumnLength,
			Type: f.Type, Flags: f.Flag, Decimals: byte(f.Decimal)}
	}
	out.Rows = make([][]byte, len(res.RowDatas))
	for i, r := range res.RowDatas {
		out.Rows[i] = r
	}
	return out
}
