package fakemysql_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/internal/fakemysql"
	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

func connect(t *testing.T, s *fakemysql.Server, user, password string) (*client.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.ConnectWithDialer(ctx, "tcp", "fake:3306", user, password, "", s.Dial)
}

func TestLoginAndQueries(t *testing.T) {
	s := fakemysql.New(fakemysql.Config{User: "u", Password: "p", Query: func(q string) (fakemysql.Answer, bool) {
		if q == "SELECT answer" {
			return fakemysql.Result([]string{"a", "b"}, []any{42, nil}, []any{"x", "y"}), true
		}
		return fakemysql.Answer{}, false
	}})
	defer s.Close()
	c, err := connect(t, s, "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	if v := c.GetServerVersion(); v != fakemysql.DefaultVersion {
		t.Fatalf("version %q", v)
	}
	r, err := c.Execute("SELECT answer")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Values) != 2 || string(r.Values[0][0].AsString()) != "42" || r.Values[0][1].Value() != nil || string(r.Values[1][1].AsString()) != "y" {
		t.Fatalf("hook answer: %v", r.Values)
	}
	if _, err := c.Execute("SET @v = 'hello', SESSION time_zone = '+01:00'"); err != nil {
		t.Fatal(err)
	}
	r, err = c.Execute("SELECT @v, @@time_zone, @@GLOBAL.time_zone, CONNECTION_ID(), DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	row := r.Values[0]
	if string(row[0].AsString()) != "hello" || string(row[1].AsString()) != "+01:00" || string(row[2].AsString()) != "SYSTEM" ||
		string(row[3].AsString()) != strconv.FormatUint(uint64(c.GetConnectionID()), 10) || row[4].Value() != nil {
		t.Fatalf("row %v", row)
	}
	if err := c.UseDB("db1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Execute("SELECT * FROM t")
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1064 {
		t.Fatalf("unknown SELECT: %v, want ERR 1064", err)
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.Open() == 0 })
	if s.Commands(mysqlwire.ComPing) != 1 || s.Commands(mysqlwire.ComInitDB) != 1 || s.Commands(mysqlwire.ComQuit) != 1 {
		t.Fatalf("commands counted wrong: ping %d init_db %d quit %d", s.Commands(mysqlwire.ComPing), s.Commands(mysqlwire.ComInitDB), s.Commands(mysqlwire.ComQuit))
	}
	if n := s.CountQueries("select"); n != 3 {
		t.Fatalf("%d SELECTs counted: %q", n, s.Queries())
	}
	if s.Logins() != 1 || s.Dials() != 1 {
		t.Fatalf("logins %d dials %d", s.Logins(), s.Dials())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestWrongPassword(t *testing.T) {
	s := fakemysql.New(fakemysql.Config{User: "u", Password: "p"})
	defer s.Close()
	_, err := connect(t, s, "u", "nope")
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1045 {
		t.Fatalf("got %v, want ERR 1045", err)
	}
	if s.Logins() != 0 {
		t.Fatal("a wrong password logged in")
	}
}

func TestDownRefuses(t *testing.T) {
	s := fakemysql.New(fakemysql.Config{})
	defer s.Close()
	c, err := connect(t, s, "any", "")
	if err != nil {
		t.Fatal(err)
	}
	s.SetDown(true)
	if err := c.Ping(); err == nil {
		t.Fatal("a connection survived SetDown")
	}
	if _, err := connect(t, s, "any", ""); err == nil {
		t.Fatal("dialed while down")
	}
	s.SetDown(false)
	c, err = connect(t, s, "any", "")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// Garbage from a client ends its connection without a panic, and Close
// leaves no goroutine behind.
func TestOddInputAndNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	s := fakemysql.New(fakemysql.Config{})
	inputs := [][]byte{
		{},                         // EOF at once
		{1, 0, 0, 1, 0},            // a 1-byte handshake response
		{0xff, 0xff, 0xff, 1, 'x'}, // a huge packet announced, then EOF
		append([]byte{40, 0, 0, 1}, strings.Repeat("\xff", 40)...),
	}
	for _, in := range inputs {
		nc, err := s.Dial(context.Background(), "tcp", "")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = readAll(nc) }()
		_, _ = nc.Write(in)
		nc.Close()
	}
	// A logged-in client sending odd commands.
	c, err := connect(t, s, "any", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]byte{{0x77}, {mysqlwire.ComChangeUser}, {mysqlwire.ComChangeUser, 'u', 0, 200}, {mysqlwire.ComQuery}} {
		c.ResetSequence()
		_ = c.WritePacket(append([]byte{0, 0, 0, 0}, cmd...))
		_, _ = c.ReadPacket()
	}
	// Left open: Close must end it.
	s.Close()
	if _, err := s.Dial(context.Background(), "tcp", ""); err == nil {
		t.Fatal("dialed a closed server")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "handshake response") {
		t.Fatalf("protocol errors not reported: %v", err)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+1 })
}

func readAll(nc net.Conn) (int, error) {
	b := make([]byte, 4096)
	n := 0
	for {
		m, err := nc.Read(b)
		n += m
		if err != nil {
			return n, err
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
