package proxy

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
	"github.com/tpproxy/tpproxy/pool"
)

// pipeConn is a clientConn on one end of a net.Pipe and a packet reader on
// the other, the client's.
func pipeConn(t *testing.T) (*clientConn, *mysqlwire.Reader, net.Conn) {
	t.Helper()
	srvEnd, cliEnd := net.Pipe()
	t.Cleanup(func() { _ = srvEnd.Close(); _ = cliEnd.Close() })
	bufs := mysqlwire.NewBufferPool(16 << 10)
	var small [smallBufSize]byte
	cc := &clientConn{nc: srvEnd, remote: "10.1.2.3:4567"}
	cc.r = mysqlwire.NewReader(srvEnd, small[:], bufs)
	cc.w = mysqlwire.NewWriter(srvEnd, bufs)
	var csmall [smallBufSize]byte
	return cc, mysqlwire.NewReader(cliEnd, csmall[:], bufs), cliEnd
}

// readAsync reads n packets from r while the test writes.
func readAsync(t *testing.T, r *mysqlwire.Reader, n int) <-chan [][]byte {
	t.Helper()
	out := make(chan [][]byte, 1)
	go func() {
		var ps [][]byte
		for range n {
			p, err := r.ReadPacket()
			if err != nil {
				t.Error(err)
				break
			}
			ps = append(ps, bytes.Clone(p))
		}
		out <- ps
	}()
	return out
}

func TestClientConnGreeting(t *testing.T) {
	cc, cr, _ := pipeConn(t)
	copy(cc.salt[:], "abcdefghijklmnopqrst")
	cc.extOffered = pool.ExtMetadata
	got := readAsync(t, cr, 1)
	caps := uint32(advertisedCaps | capSSL)
	if err := cc.writeGreeting(greeting{version: "10.11.14-MariaDB-tpproxy", connID: 77, caps: caps, collation: 45, plugin: pluginNative}); err != nil {
		t.Fatal(err)
	}
	p := (<-got)[0]
	if p[0] != 10 {
		t.Fatalf("protocol version %d", p[0])
	}
	ver, rest, err := mysqlwire.NullTerminated(p[1:])
	if err != nil || string(ver) != "10.11.14-MariaDB-tpproxy" {
		t.Fatalf("version %q, %v", ver, err)
	}
	if id := binary.LittleEndian.Uint32(rest); id != 77 {
		t.Errorf("connection id %d", id)
	}
	salt := append(bytes.Clone(rest[4:12]), rest[31:43]...)
	if string(salt) != "abcdefghijklmnopqrst" {
		t.Errorf("salt %q", salt)
	}
	gotCaps := uint32(binary.LittleEndian.Uint16(rest[13:])) | uint32(binary.LittleEndian.Uint16(rest[18:]))<<16
	if gotCaps != caps {
		t.Errorf("capabilities %#x, want %#x", gotCaps, caps)
	}
	if rest[15] != 45 {
		t.Errorf("collation %d", rest[15])
	}
	if st := binary.LittleEndian.Uint16(rest[16:]); st != mysqlwire.StatusAutocommit {
		t.Errorf("status %#x", st)
	}
	if ext := binary.LittleEndian.Uint32(rest[27:]); ext != pool.ExtMetadata {
		t.Errorf("MariaDB capabilities %#x", ext)
	}
	plugin, _, err := mysqlwire.NullTerminated(rest[44:])
	if err != nil || string(plugin) != pluginNative {
		t.Errorf("plugin %q, %v", plugin, err)
	}
}

// TestClientConnOK: the OK's layout follows CLIENT_SESSION_TRACK, and the
// state-changed flag is only set when state information goes with it.
func TestClientConnOK(t *testing.T) {
	state := mysqlwire.AppendStateEntry(nil, mysqlwire.TrackSchema, []byte("\x02db"))
	for _, tc := range []struct {
		name       string
		caps       uint32
		state      []byte
		wantStatus uint16
		wantState  []byte
	}{
		{"classic", 0, state, mysqlwire.StatusAutocommit, nil},
		{"tracked without state", capSessionTrack, nil, mysqlwire.StatusAutocommit, nil},
		{"tracked", capSessionTrack, state, mysqlwire.StatusAutocommit | mysqlwire.StatusSessionStateChanged, state},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, cr, _ := pipeConn(t)
			cc.caps = tc.caps
			got := readAsync(t, cr, 1)
			if err := cc.writeOKPacket(3, 9, mysqlwire.StatusAutocommit|mysqlwire.StatusSessionStateChanged, 1, nil, tc.state); err != nil {
				t.Fatal(err)
			}
			if err := cc.w.Flush(); err != nil {
				t.Fatal(err)
			}
			ok, err := mysqlwire.ParseOK((<-got)[0], tc.caps&capSessionTrack != 0)
			if err != nil {
				t.Fatal(err)
			}
			if ok.AffectedRows != 3 || ok.InsertID != 9 || ok.Warnings != 1 || ok.Status != tc.wantStatus {
				t.Errorf("OK %+v, want status %#x", ok, tc.wantStatus)
			}
			if !bytes.Equal(ok.SessionState, tc.wantState) {
				t.Errorf("session state %q, want %q", ok.SessionState, tc.wantState)
			}
		})
	}
}

// TestClientConnValue: a one-value result set is column count, column,
// EOF, row, EOF, with the session's status in both EOFs.
func TestClientConnValue(t *testing.T) {
	cc, cr, _ := pipeConn(t)
	got := readAsync(t, cr, 5)
	status := uint16(mysqlwire.StatusInTrans)
	if err := cc.writeSigned([]byte("ROW_COUNT()"), -1, status); err != nil {
		t.Fatal(err)
	}
	if err := cc.w.Flush(); err != nil {
		t.Fatal(err)
	}
	ps := <-got
	if len(ps) != 5 {
		t.Fatalf("%d packets", len(ps))
	}
	if n, _, _ := mysqlwire.LenEncInt(ps[0]); n != 1 {
		t.Errorf("column count %d", n)
	}
	if !bytes.Contains(ps[1], []byte("ROW_COUNT()")) {
		t.Errorf("column %q does not name ROW_COUNT()", ps[1])
	}
	for _, i := range []int{2, 4} {
		if !mysqlwire.IsEOF(ps[i]) {
			t.Fatalf("packet %d is not an EOF: %x", i, ps[i])
		}
		if _, st := mysqlwire.EOFStatus(ps[i]); st != status {
			t.Errorf("EOF %d status %#x, want %#x", i, st, status)
		}
	}
	if v, _, err := mysqlwire.LenEncString(ps[3]); err != nil || string(v) != "-1" {
		t.Errorf("row %q, %v", v, err)
	}
}

func TestClientConnRemoteHost(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"10.1.2.3:4567", "10.1.2.3"},
		{"[::1]:3306", "::1"},
		{"@", "@"}, // a unix socket peer
	} {
		if got := (&clientConn{remote: tc.remote}).remoteHost(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestInflightWatcher: a statement that runs past watchAfter gets a
// watcher reading the client; ending the statement stops it, and what the
// client sent meanwhile stays for the session to read.
func TestInflightWatcher(t *testing.T) {
	cc, _, cli := pipeConn(t)
	var f inflight
	c := new(pool.Conn) // identity only: nothing is sent on it
	var info [infoLen]byte
	f.beginExec(c, comQuery, []byte("SELECT SLEEP(10)"), &info)
	if f.cur != c || f.curCmd != comQuery || string(f.curInfo[:f.curInfoLen]) != "SELECT SLEEP(10)" {
		t.Fatalf("beginExec recorded %v %d %q", f.cur, f.curCmd, f.curInfo[:f.curInfoLen])
	}
	f.maybeWatch(time.Now(), cc, nil, nil, 1)
	if f.watchDone != nil {
		t.Fatal("watcher started before watchAfter")
	}
	f.maybeWatch(time.Now().Add(watchAfter), cc, nil, nil, 1)
	if f.watchDone == nil {
		t.Fatal("no watcher after watchAfter")
	}
	// The client pipelines its next command while the statement runs.
	// net.Pipe's Write returns once the watcher has read it all.
	wrote := make(chan error, 1)
	go func() { _, err := cli.Write([]byte{1, 0, 0, 0, comPing}); wrote <- err }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not read the client")
	}
	if ended := f.endExec(cc.nc); ended {
		t.Fatal("endExec reports the session ended")
	}
	if f.watchDone != nil || f.cur != nil {
		t.Fatal("endExec left the watcher or the statement")
	}
	cc.r.SetSeq(0)
	p, err := cc.r.ReadPacket()
	if err != nil || len(p) != 1 || p[0] != comPing {
		t.Fatalf("pipelined command lost: %x, %v", p, err)
	}

	// KILL CONNECTION marks the session; the statement's end reports it.
	f.beginExec(c, comQuery, nil, &info)
	f.mu.Lock()
	f.killed = true
	f.mu.Unlock()
	if !f.endExec(cc.nc) {
		t.Fatal("endExec missed the kill")
	}

	// While the session reads the client itself, no watcher starts.
	f.killed = false
	f.beginExec(c, comQuery, nil, &info)
	f.stopWatching(cc.nc)
	f.maybeWatch(time.Now().Add(watchAfter), cc, nil, nil, 1)
	if f.watchDone != nil {
		t.Fatal("watcher started while the session reads the client")
	}
	f.allowWatching()
	f.maybeWatch(time.Now().Add(watchAfter), cc, nil, nil, 1)
	if f.watchDone == nil {
		t.Fatal("no watcher after allowWatching")
	}
	f.endExec(cc.nc)
}
