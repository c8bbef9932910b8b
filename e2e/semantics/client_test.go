package semantics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// conn is one client connection over go-mysql's client, which shows what
// an application can see: OK packet fields, status flags, column
// definitions, and it can send COM_RESET_CONNECTION and COM_CHANGE_USER
// and drop the socket without COM_QUIT.
type conn struct {
	c *client.Conn
	// id is CONNECTION_ID() as the client learnt it right after
	// connecting: the server thread directly, the proxy's id through it.
	id    uint32
	dead  bool
	stmts map[string]*client.Stmt
	user  string
	pass  string
	salt  []byte
}

// dialOpts say how a client connects.
type dialOpts struct {
	addr, user, pass, db string
	// multi asks for CLIENT_MULTI_STATEMENTS.
	multi bool
}

// dial connects and learns the connection id.
func dial(o dialOpts) (*conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	c, err := client.ConnectWithContext(ctx, o.addr, o.user, o.pass, o.db, connectTimeout, func(c *client.Conn) error {
		c.ReadTimeout = opTimeout
		c.WriteTimeout = opTimeout
		// The classic protocol on both paths: tpproxy does not negotiate
		// CLIENT_DEPRECATE_EOF, and go-mysql drops the warning count of
		// a result set's closing OK packet.
		c.UnsetCapability(gomysql.CLIENT_DEPRECATE_EOF)
		c.UnsetCapability(gomysql.CLIENT_QUERY_ATTRIBUTES)
		if err := c.SetCapability(gomysql.CLIENT_MULTI_RESULTS); err != nil {
			return err
		}
		if err := c.SetCapability(gomysql.CLIENT_PS_MULTI_RESULTS); err != nil {
			return err
		}
		if o.multi {
			if err := c.SetCapability(gomysql.CLIENT_MULTI_STATEMENTS); err != nil {
				return err
			}
		}
		return c.SetCollation("utf8mb4_general_ci")
	})
	if err != nil {
		return nil, err
	}
	s := &conn{c: c, stmts: map[string]*client.Stmt{}, user: o.user, pass: o.pass, salt: saltOf(c)}
	r := s.query("SELECT CONNECTION_ID()")
	if r.failed() || len(r.parts) != 1 || len(r.parts[0].rows) != 1 {
		s.abort()
		return nil, fmt.Errorf("SELECT CONNECTION_ID(): %s", r.display())
	}
	id, err := strconv.ParseUint(r.cell(0, 0), 10, 32)
	if err != nil {
		s.abort()
		return nil, fmt.Errorf("SELECT CONNECTION_ID() = %q", r.cell(0, 0))
	}
	s.id = uint32(id)
	return s, nil
}

// dialRoot connects as root directly to the server, with lock waits
// bounded so that state a proxy failed to clean up cannot hang setup or
// teardown.
func dialRoot(t testing.TB) (*conn, error) {
	c, err := dial(dialOpts{addr: env.Server(t).Addr, user: "root", db: ""})
	if err != nil {
		return nil, err
	}
	if r := c.query("SET SESSION lock_wait_timeout = 2, innodb_lock_wait_timeout = 2"); r.failed() {
		c.abort()
		return nil, fmt.Errorf("root: %s", r.display())
	}
	return c, nil
}

// saltOf reads the greeting's scramble, which COM_CHANGE_USER answers;
// go-mysql keeps it private.
func saltOf(c *client.Conn) []byte {
	f := reflect.ValueOf(c).Elem().FieldByName("salt")
	if !f.IsValid() {
		return nil
	}
	b := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Bytes()
	return append([]byte(nil), b...)
}

// fail classifies a client error: a server error packet keeps the
// connection; anything else (timeout, EOF, reset) ends it.
func (s *conn) fail(err error) result {
	var me *gomysql.MyError
	if errors.As(err, &me) {
		return result{parts: []part{{kind: kindErr, code: me.Code, state: me.State, msg: me.Message}}}
	}
	kind := kindLost
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		kind = kindTimeout
	}
	s.abort()
	return result{parts: []part{{kind: kind, msg: err.Error()}}}
}

func noConn() result { return result{parts: []part{{kind: kindNoConn}}} }

// query sends one COM_QUERY and reads every result it produces.
func (s *conn) query(q string) result {
	if s.dead {
		return noConn()
	}
	var out result
	var ferr error
	_, err := s.c.ExecuteMultiple(q, func(r *gomysql.Result, err error) {
		if err != nil {
			ferr = err
			return
		}
		out.parts = append(out.parts, partOf(r))
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		f := s.fail(err)
		out.parts = append(out.parts, f.parts...)
	}
	return out
}

// prepare sends COM_STMT_PREPARE and keeps the statement under name.
func (s *conn) prepare(name, q string) result {
	if s.dead {
		return noConn()
	}
	st, err := s.c.Prepare(q)
	if err != nil {
		delete(s.stmts, name)
		return s.fail(err)
	}
	s.stmts[name] = st
	p := part{kind: kindPrepared, params: st.ParamNum(), columns: st.ColumnNum(), warnings: uint16(st.WarningsNum())}
	if fs, err := st.GetColumnFields(); err == nil {
		p.fields = fs
	}
	return result{parts: []part{p}}
}

// execute sends COM_STMT_EXECUTE for a statement prepared under name.
func (s *conn) execute(name string, args []any) result {
	if s.dead {
		return noConn()
	}
	st, ok := s.stmts[name]
	if !ok {
		return result{parts: []part{{kind: kindNoStmt}}}
	}
	r, err := st.Execute(args...)
	if err != nil {
		return s.fail(err)
	}
	return result{parts: []part{partOf(r)}}
}

// closeStmt sends COM_STMT_CLOSE, which has no answer.
func (s *conn) closeStmt(name string) result {
	if s.dead {
		return noConn()
	}
	st, ok := s.stmts[name]
	if !ok {
		return result{parts: []part{{kind: kindNoStmt}}}
	}
	delete(s.stmts, name)
	if err := st.Close(); err != nil {
		return s.fail(err)
	}
	return result{parts: []part{{kind: kindSent}}}
}

// reset sends COM_RESET_CONNECTION.
func (s *conn) reset() result {
	if s.dead {
		return noConn()
	}
	s.c.ResetSequence()
	if err := s.c.WritePacket([]byte{1, 0, 0, 0, gomysql.COM_RESET_CONNECTION}); err != nil {
		return s.fail(err)
	}
	r, err := s.c.ReadOKPacket()
	if err != nil {
		return s.fail(err)
	}
	return result{parts: []part{partOf(r)}}
}

// changeUser sends COM_CHANGE_USER for the same account and db, answering
// an authentication switch if the server asks for one.
func (s *conn) changeUser(db string) result {
	if s.dead {
		return noConn()
	}
	p := []byte{0, 0, 0, 0, gomysql.COM_CHANGE_USER}
	p = append(p, s.user...)
	p = append(p, 0)
	auth := gomysql.CalcNativePassword(s.salt, []byte(s.pass))
	if s.pass == "" {
		auth = nil
	}
	p = append(p, byte(len(auth)))
	p = append(p, auth...)
	p = append(p, db...)
	p = append(p, 0)
	p = append(p, 45, 0) // utf8mb4_general_ci
	p = append(p, "mysql_native_password"...)
	p = append(p, 0)
	if strings.Contains(s.c.CapabilityString(), "CLIENT_CONNECT_ATTRS") { // negotiated (HasCapability reports the client's wish only)
		p = append(p, 0) // no connection attributes
	}
	s.c.ResetSequence()
	if err := s.c.WritePacket(p); err != nil {
		return s.fail(err)
	}
	for range 3 {
		data, err := s.c.ReadPacket()
		if err != nil {
			return s.fail(err)
		}
		switch data[0] {
		case gomysql.OK_HEADER:
			return result{parts: []part{partOf(s.c.HandleOKPacket(data))}}
		case gomysql.ERR_HEADER:
			return s.fail(s.c.HandleErrorPacket(data))
		case gomysql.EOF_HEADER: // auth switch request: plugin name, then a new salt
			rest := data[1:]
			i := 0
			for i < len(rest) && rest[i] != 0 {
				i++
			}
			if i+1 <= len(rest) {
				salt := rest[min(i+1, len(rest)):]
				if n := len(salt); n > 0 && salt[n-1] == 0 {
					salt = salt[:n-1]
				}
				s.salt = append([]byte(nil), salt...)
			}
			resp := append([]byte{0, 0, 0, 0}, gomysql.CalcNativePassword(s.salt, []byte(s.pass))...)
			if err := s.c.WritePacket(resp); err != nil {
				return s.fail(err)
			}
		default:
			s.abort()
			return result{parts: []part{{kind: kindLost, msg: fmt.Sprintf("unexpected packet %x after COM_CHANGE_USER", data[:min(8, len(data))])}}}
		}
	}
	s.abort()
	return result{parts: []part{{kind: kindLost, msg: "authentication did not finish after COM_CHANGE_USER"}}}
}

// quit sends COM_QUIT and closes the socket.
func (s *conn) quit() result {
	if s.dead {
		return noConn()
	}
	s.dead = true
	_ = s.c.Quit()
	_ = s.c.Close()
	return result{parts: []part{{kind: kindSent}}}
}

// abort drops the TCP connection without COM_QUIT (the peer sees a reset).
func (s *conn) abort() result {
	if s.dead {
		return noConn()
	}
	s.dead = true
	if tc, ok := s.c.Conn.Conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = s.c.Conn.Conn.Close()
	return result{parts: []part{{kind: kindSent}}}
}

// partOf turns a go-mysql result into what the suite compares.
func partOf(r *gomysql.Result) part {
	if r == nil {
		return part{kind: kindOK}
	}
	p := part{status: r.Status, warnings: r.Warnings}
	if r.Resultset == nil || r.Fields == nil {
		p.kind = kindOK
		p.affected, p.insertID = r.AffectedRows, r.InsertId
		return p
	}
	p.kind = kindRows
	p.fields = r.Fields
	for _, vals := range r.Values {
		row := make([]*string, len(vals))
		for j := range vals {
			row[j] = cellText(&vals[j])
		}
		p.rows = append(p.rows, row)
	}
	return p
}

func cellText(v *gomysql.FieldValue) *string {
	var s string
	switch v.Type {
	case gomysql.FieldValueTypeNull:
		return nil
	case gomysql.FieldValueTypeString:
		s = string(v.AsString())
	default:
		s = v.String()
	}
	return &s
}
