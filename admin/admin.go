// Package admin serves tpproxy's admin port: a MySQL-protocol listener on
// which an operator reads and changes the thread pool with the statements
// MariaDB has for its own (SHOW VARIABLES, SET GLOBAL thread_pool_*, the
// information_schema.THREAD_POOL_* tables), lists and kills the proxy's
// client sessions (SHOW PROCESSLIST, KILL) and reads its counters (SHOW
// STATUS). Any MySQL client can connect: the mariadb and mysql command-line
// tools, go-sql-driver, connectors.
//
// The protocol side is go-mysql's server package; this package parses the
// few statements it answers and reads the scheduler, front end and pool
// through their snapshot methods. Changes go through
// scheduler.Update, one call per SET statement.
package admin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"

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
}

// Defaults of Config.
const (
	DefaultListen   = "127.0.0.1:6032"
	DefaultUser     = "admin"
	DefaultPassword = "admin"
)

// handshakeTimeout bounds a client's login, so that a connection that
// never sends its handshake response does not stay forever.
const handshakeTimeout = 10 * time.Second

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

	mysql *server.Server
	auth  *authenticator

	// mu guards listeners and closed.
	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	closed    bool
	// wg counts running Serve calls, which wait for their connections.
	wg sync.WaitGroup

	// conns counts connections being served, logged in or not.
	conns atomic.Int64
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
		// No TLS config: the port offers no TLS, so clients do not try it,
		// and mysql_native_password needs no RSA key either.
		mysql: server.NewServer(serverVersion, charsetUTF8MB4, mysql.AUTH_NATIVE_PASSWORD, nil, nil),
	}
	a.auth = &authenticator{
		user: cfg.User,
		cred: server.Credential{Passwords: []string{cfg.Password}, AuthPluginName: mysql.AUTH_NATIVE_PASSWORD},
		// Any other user name is checked against a password nobody knows,
		// so that it fails exactly like a wrong password: ERR 1045.
		decoy: server.Credential{Passwords: []string{rand.Text()}, AuthPluginName: mysql.AUTH_NATIVE_PASSWORD},
		log:   a.log,
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
}

// serveConn runs one admin connection from handshake to teardown. The
// connection is closed when ctx ends.
func (a *Server) serveConn(ctx context.Context, nc net.Conn) {
	a.conns.Add(1)
	defer a.conns.Add(-1)
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()

	h := &handler{a: a, log: a.log.With("remote", nc.RemoteAddr().String())}
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	c, err := a.handshake(nc, h)
	switch {
	case errors.Is(err, errBadHandshake):
		h.log.Warn("admin: malformed handshake", "err", err.Error())
		return
	case err != nil:
		// Access denied is logged by the authenticator; the rest is a
		// client gone or speaking something else.
		h.log.Debug("admin: handshake failed", "err", err.Error())
		return
	}
	_ = nc.SetDeadline(time.Time{})
	h.log = h.log.With("conn_id", c.ConnectionID(), "user", c.GetUser())
	h.log.Debug("admin: session started")
	if err := h.commands(c); err != nil {
		// go-mysql's errors print their stack with %+v, as slog does.
		h.log.Debug("admin: session ended", "err", err.Error())
		return
	}
	h.log.Debug("admin: session ended")
}

// handshake runs go-mysql's login. Its parser of the handshake response
// (v1.16.0) indexes bytes it never checked, the length of the connection
// attributes among them, so one malformed packet from a client that has
// not logged in would panic the process. Such a panic becomes a failed
// handshake here; nothing but the library's login runs under this recover.
func (a *Server) handshake(nc net.Conn, h *handler) (c *server.Conn, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("%w: %v", errBadHandshake, p)
		}
	}()
	return a.mysql.NewCustomizedConn(nc, a.auth, h)
}

// commands answers the connection's commands until COM_QUIT or an error.
// It replaces go-mysql's Conn.HandleCommand, whose dispatch indexes the
// command byte of an empty packet and so would let any logged-in client
// panic the process.
func (h *handler) commands(c *server.Conn) error {
	for {
		data, err := c.ReadPacket()
		if err != nil {
			return err
		}
		if len(data) > 0 && data[0] == mysql.COM_QUIT {
			return nil
		}
		if err := h.command(c, data); err != nil {
			return err
		}
		c.ResetSequence()
	}
}

// command answers one command packet.
func (h *handler) command(c *server.Conn, data []byte) error {
	if len(data) == 0 {
		return c.WriteValue(toMySQL(newErr(errUnknownCommand, "Unknown command")))
	}
	cmd, arg := data[0], data[1:]
	switch cmd {
	case mysql.COM_QUERY:
		res, err := h.HandleQuery(string(arg))
		if err != nil {
			return c.WriteValue(err)
		}
		return c.WriteValue(res)
	case mysql.COM_PING, mysql.COM_RESET_CONNECTION:
		return c.WriteValue(nil) // OK
	case mysql.COM_INIT_DB:
		return c.WriteValue(h.UseDB(string(arg)))
	case mysql.COM_FIELD_LIST:
		fields, _ := h.HandleFieldList("", "")
		return c.WriteValue(fields)
	case mysql.COM_SET_OPTION:
		// Multi-statement on or off: answered with an EOF packet.
		return c.WritePacket([]byte{0, 0, 0, 0, mysql.EOF_HEADER, 0, 0, 0, 0})
	case mysql.COM_STMT_CLOSE, mysql.COM_STMT_SEND_LONG_DATA:
		return nil // no answer
	case mysql.COM_STMT_PREPARE, mysql.COM_STMT_EXECUTE, mysql.COM_STMT_RESET, mysql.COM_STMT_FETCH:
		_, _, _, err := h.HandleStmtPrepare("")
		return c.WriteValue(err)
	}
	return c.WriteValue(h.HandleOtherCommand(cmd, arg))
}

// authenticator gives go-mysql the admin credentials.
type authenticator struct {
	user        string
	cred, decoy server.Credential
	log         *slog.Logger
}

// GetCredential implements server.AuthenticationHandler.
func (au *authenticator) GetCredential(user string) (server.Credential, bool, error) {
	if user == au.user {
		return au.cred, true, nil
	}
	return au.decoy, true, nil
}

// OnAuthSuccess implements server.AuthenticationHandler.
func (au *authenticator) OnAuthSuccess(c *server.Conn) error {
	au.log.Info("admin: login", "user", c.GetUser(), "remote", c.RemoteAddr().String())
	return nil
}

// OnAuthFailure implements server.AuthenticationHandler.
func (au *authenticator) OnAuthFailure(c *server.Conn, err error) {
	au.log.Warn("admin: login failed", "user", c.GetUser(), "remote", c.RemoteAddr().String(), "err", err.Error())
}

// handler answers one connection's commands. It implements
// server.Handler, of which go-mysql itself calls only UseDB (for the
// schema in the handshake); commands calls the rest.
type handler struct {
	a   *Server
	log *slog.Logger
}

// UseDB accepts any schema: statements name their tables in full.
func (h *handler) UseDB(string) error { return nil }

// HandleQuery runs one admin statement.
func (h *handler) HandleQuery(q string) (*mysql.Result, error) {
	res, err := h.a.query(q)
	if err != nil {
		me := toMySQL(err)
		h.log.Debug("admin: statement failed", "code", me.Code, "msg", me.Message)
		return nil, me
	}
	return res, nil
}

// HandleFieldList answers COM_FIELD_LIST with no columns.
func (h *handler) HandleFieldList(string, string) ([]*mysql.Field, error) {
	return []*mysql.Field{}, nil
}

// HandleStmtPrepare refuses the binary protocol.
func (h *handler) HandleStmtPrepare(string) (int, int, any, error) {
	return 0, 0, nil, toMySQL(newErr(errPrepared, "This command is not supported in the prepared statement protocol yet"))
}

// HandleStmtExecute is never called: no statement is ever prepared.
func (h *handler) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	_, _, _, err := h.HandleStmtPrepare("")
	return nil, err
}

// HandleStmtClose has nothing to close.
func (h *handler) HandleStmtClose(any) error { return nil }

// HandleOtherCommand refuses the commands the admin port does not answer
// (COM_STATISTICS, COM_CHANGE_USER, replication...).
func (h *handler) HandleOtherCommand(byte, []byte) error {
	return toMySQL(newErr(errUnknownCommand, "Unknown command"))
}
