// Package eventloop measures an event loop (gnet v2) against Go's
// netpoller (a goroutine per connection) for tpproxy's client side (issue
// #37 item 2): a server answering length-prefixed requests as MySQL
// packets are framed (a 64-byte request, a 128-byte answer), run as a
// process of its own so that its CPU per round trip is read from
// /proc/PID/stat apart from the clients'. It is a module of its own so
// that gnet stays out of tpproxy's dependencies.
//
//	cd bench/eventloop && go test -run '^$' -bench . -benchtime 200000x
package eventloop

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

const (
	reqLen   = 64
	replyLen = 128
)

func TestMain(m *testing.M) {
	if kind := os.Getenv("EVENTLOOP_SERVER"); kind != "" {
		serve(kind, os.Getenv("EVENTLOOP_ADDR"))
		return
	}
	os.Exit(m.Run())
}

// serve runs the server of kind until the process is killed.
func serve(kind, addr string) {
	switch kind {
	case "netpoll":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			panic(err)
		}
		fmt.Println("ready")
		for {
			c, err := ln.Accept()
			if err != nil {
				panic(err)
			}
			go func() {
				buf := make([]byte, 4+reqLen)
				reply := frame(replyLen)
				for {
					if _, err := io.ReadFull(c, buf[:4]); err != nil {
						return
					}
					n := int(binary.LittleEndian.Uint32(buf[:4]) & 0xffffff)
					if _, err := io.ReadFull(c, buf[4:4+n]); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	case "gnet":
		h := &handler{reply: frame(replyLen)}
		err := gnet.Run(h, "tcp://"+addr, gnet.WithMulticore(true), gnet.WithTCPNoDelay(gnet.TCPNoDelay))
		panic(err)
	}
	panic("unknown server " + kind)
}

// frame is a packet of n payload bytes behind a MySQL-style header.
func frame(n int) []byte {
	b := make([]byte, 4+n)
	binary.LittleEndian.PutUint32(b, uint32(n))
	return b
}

type handler struct {
	gnet.BuiltinEventEngine
	reply []byte
}

func (h *handler) OnBoot(gnet.Engine) gnet.Action {
	fmt.Println("ready")
	return gnet.None
}

func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	for c.InboundBuffered() >= 4 {
		hdr, _ := c.Peek(4)
		n := int(binary.LittleEndian.Uint32(hdr) & 0xffffff)
		if c.InboundBuffered() < 4+n {
			break
		}
		_, _ = c.Discard(4 + n)
		_, _ = c.Write(h.reply)
	}
	return gnet.None
}

// cpu reads a process's utime+stime.
func cpu(t testing.TB, pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func BenchmarkPingPong(b *testing.B) {
	for _, kind := range []string{"netpoll", "gnet"} {
		for _, clients := range []int{8, 64} {
			b.Run(fmt.Sprintf("%s/%d", kind, clients), func(b *testing.B) { pingPong(b, kind, clients) })
		}
	}
}

func pingPong(b *testing.B, kind string, clients int) {
	addr := freeAddr(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "EVENTLOOP_SERVER="+kind, "EVENTLOOP_ADDR="+addr, "GOMAXPROCS=2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make([]byte, 6)
	if _, err := io.ReadFull(out, ready); err != nil {
		b.Fatal(err)
	}
	conns := make([]net.Conn, clients)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", addr); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	c0, t0 := cpu(b, cmd.Process.Pid), time.Now()
	for _, c := range conns {
		wg.Go(func() {
			req, reply := frame(reqLen), make([]byte, 4+replyLen)
			for left.Add(-1) >= 0 {
				if _, err := c.Write(req); err != nil {
					panic(err)
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	el, c1 := time.Since(t0), cpu(b, cmd.Process.Pid)
	b.StopTimer()
	b.ReportMetric(float64(c1-c0)/float64(time.Microsecond)/float64(b.N), "server-µs/op")
	b.ReportMetric(float64(b.N)/el.Seconds(), "rt/s")
}
