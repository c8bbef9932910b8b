package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/proxy"
)

// echoHandler answers "SELECT n" with one row holding n and a NULL, "FAIL"
// with an error, anything else with an OK.
type echoHandler struct{}

func (echoHandler) Query(_ context.Context, q string) (*proxy.LocalResult, error) {
	switch {
	case strings.HasPrefix(q, "SELECT "):
		v := strings.TrimPrefix(q, "SELECT ")
		row := append(mysqlwire.AppendLenEncInt(nil, uint64(len(v))), v...)
		row = append(row, 0xfb)
		return &proxy.LocalResult{
			Columns: []mysqlwire.Column{
				{Name: []byte("v"), Charset: 45, Length: 64, Type: mysqlwire.TypeVarString},
				{Name: []byte("nothing"), Charset: 45, Length: 64, Type: mysqlwire.TypeVarString},
			},
			Rows: [][]byte{row},
		}, nil
	case q == "FAIL":
		return nil, &mysqlwire.Error{Code: 1146, State: "42S02", Message: "Table 'x' doesn't exist"}
	}
	return &proxy.LocalResult{AffectedRows: 3}, nil
}

var registerPipe sync.Once

var quietLog = slog.New(slog.DiscardHandler)

// localDB opens a go-sql-driver handle whose connections are net.Pipes
// served by ServeLocal.
func localDB(t *testing.T, user, password string) *sql.DB {
	t.Helper()
	registerPipe.Do(func() {
		mysql.RegisterDialContext("localpipe", func(ctx context.Context, _ string) (net.Conn, error) {
			srvEnd, cliEnd := net.Pipe()
			go func() {
				_ = proxy.ServeLocal(context.Background(), srvEnd, 7, proxy.LocalConfig{
					ServerVersion: "8.0.11-test", User: "op", Password: "pw", Handler: echoHandler{}, Logger: quietLog,
				})
			}()
			return cliEnd, nil
		})
	})
	db, err := sql.Open("mysql", user+":"+password+"@localpipe(x)/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestServeLocal: a local port (the admin port's protocol side) logs in
// its one account, answers queries with result sets, OKs and errors, and
// refuses other credentials with ERR 1045, with no server anywhere.
func TestServeLocal(t *testing.T) {
	ctx := t.Context()
	db := localDB(t, "op", "pw")
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	var v string
	var null sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT hello").Scan(&v, &null); err != nil || v != "hello" || null.Valid {
		t.Fatalf("SELECT: %q %v %v", v, null, err)
	}
	res, err := db.ExecContext(ctx, "SET GLOBAL x = 1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Errorf("affected %d", n)
	}
	var me *mysql.MySQLError
	if _, err := db.ExecContext(ctx, "FAIL"); !errors.As(err, &me) || me.Number != 1146 || string(me.SQLState[:]) != "42S02" {
		t.Errorf("FAIL: %v", err)
	}
	// The binary protocol is refused, as the server refuses what it does
	// not support.
	if _, err := db.QueryContext(ctx, "SELECT ?", 1); !errors.As(err, &me) || me.Number != 1295 {
		t.Errorf("prepared: %v", err)
	}

	for _, cred := range [][2]string{{"op", "wrong"}, {"other", "pw"}, {"op", ""}} {
		err := localDB(t, cred[0], cred[1]).PingContext(ctx)
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Errorf("%s/%s: %v, want ERR 1045", cred[0], cred[1], err)
		}
	}
}

// TestServeLocalMalformed: a handshake response too short to parse gets
// ERR 1043 and the connection ends; nothing panics.
func TestServeLocalMalformed(t *testing.T) {
	srvEnd, cliEnd := net.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- proxy.ServeLocal(t.Context(), srvEnd, 1, proxy.LocalConfig{User: "op", Password: "pw", Handler: echoHandler{}, Logger: quietLog})
	}()
	var small [256]byte
	r := mysqlwire.NewReader(cliEnd, small[:], nil)
	if _, err := r.ReadPacket(); err != nil { // the greeting
		t.Fatal(err)
	}
	if _, err := cliEnd.Write([]byte{3, 0, 0, 1, 0x0f, 0, 0}); err != nil {
		t.Fatal(err)
	}
	r.SetSeq(2)
	p, err := r.ReadPacket()
	if err != nil || !mysqlwire.IsERR(p) || mysqlwire.ParseERR(p).Code != 1043 {
		t.Fatalf("answer %x, %v", p, err)
	}
	if err := <-done; err == nil {
		t.Error("ServeLocal returned nil after a malformed handshake")
	}
}
