package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Zero-downtime upgrade by listener hand-over: the running tpproxy listens
// on upgrade_socket (a unix socket only its user may open). A new process
// started with --takeover connects to it and receives the running one's
// listening sockets (SCM_RIGHTS): the kernel's accept queues are shared,
// so no connection attempt is refused or lost while the two swap. The new
// process starts on those sockets (and listens anew where its
// configuration changed an address), then says READY; only then does the
// old one stop accepting and shut down gracefully (shutdown_timeout), its
// sessions finishing their transactions. If the new process fails before
// READY, the old one goes on as if nothing happened.
//
// The exchange, one line each way, then one message with the descriptors:
//
//	new → old  "TAKEOVER 1\n"
//	old → new  JSON {"pid": N, "names": [...]} + "\n", with one fd per name
//	new → old  "READY\n"        (or nothing: the old process keeps serving)
//	old → new  "BYE\n"          (it has stopped accepting)
const takeoverHello = "TAKEOVER 1"

// takeoverTimeout bounds each step of the exchange (a new process may take
// this long to start its pool before saying READY).
const takeoverTimeout = 2 * time.Minute

type takeoverOffer struct {
	PID   int      `json:"pid"`
	Names []string `json:"names"`
}

// inherited holds the listeners received from the previous process, by
// name, until listen takes them.
type inherited struct {
	conn *net.UnixConn // to the previous process, for READY
	lns  map[string]net.Listener
	pid  int
}

// takeOver asks the process listening on path for its listeners.
func takeOver(path string) (*inherited, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("takeover: no running tpproxy answers on %s: %w", path, err)
	}
	uc := c.(*net.UnixConn)
	_ = uc.SetDeadline(time.Now().Add(takeoverTimeout))
	if _, err := uc.Write([]byte(takeoverHello + "\n")); err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("takeover: %w", err)
	}
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(64*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		_ = uc.Close()
		return nil, fmt.Errorf("takeover: reading the listeners: %w", err)
	}
	var fds []int
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if rights, err := syscall.ParseUnixRights(&m); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	closeFDs := func() {
		for _, fd := range fds {
			_ = syscall.Close(fd)
		}
	}
	var offer takeoverOffer
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(buf[:n]))), &offer); err != nil || len(offer.Names) != len(fds) {
		closeFDs()
		_ = uc.Close()
		return nil, fmt.Errorf("takeover: the running process sent %d descriptors for %q (%v)", len(fds), buf[:n], err)
	}
	in := &inherited{conn: uc, lns: map[string]net.Listener{}, pid: offer.PID}
	for i, name := range offer.Names {
		f := os.NewFile(uintptr(fds[i]), name)
		ln, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			in.close()
			for _, fd := range fds[i+1:] {
				_ = syscall.Close(fd)
			}
			return nil, fmt.Errorf("takeover: listener %s: %w", name, err)
		}
		in.lns[name] = ln
	}
	return in, nil
}

// listen returns the inherited listener of name when it listens on addr,
// else a new one.
func (in *inherited) listen(name, addr string) (net.Listener, error) {
	if in != nil {
		if ln, ok := in.lns[name]; ok && sameAddr(ln.Addr(), addr) {
			delete(in.lns, name)
			return ln, nil
		}
	}
	return net.Listen("tcp", addr)
}

// sameAddr reports whether a listener on have serves the configured addr.
func sameAddr(have net.Addr, addr string) bool {
	ta, ok := have.(*net.TCPAddr)
	if !ok {
		return false
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != fmt.Sprint(ta.Port) {
		return false
	}
	if host == "" {
		return ta.IP.IsUnspecified()
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return false
		}
		ip = ips[0]
	}
	return ip.Equal(ta.IP) || (ip.IsUnspecified() && ta.IP.IsUnspecified())
}

// ready tells the previous process this one serves, closes the listeners
// the configuration no longer names, and waits for the old one to stop
// accepting.
func (in *inherited) ready(log *slog.Logger) {
	for name, ln := range in.lns {
		log.Info("takeover: the configuration no longer uses an inherited listener; closing it", "name", name, "addr", ln.Addr().String())
		_ = ln.Close()
	}
	in.lns = nil
	if _, err := in.conn.Write([]byte("READY\n")); err != nil {
		log.Warn("takeover: could not tell the previous process", "pid", in.pid, "err", err)
		return
	}
	line, err := bufio.NewReader(in.conn).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "BYE" {
		log.Warn("takeover: the previous process did not confirm", "pid", in.pid, "answer", line, "err", err)
	} else {
		log.Info("takeover: the previous process stopped accepting and is draining", "pid", in.pid)
	}
	_ = in.conn.Close()
}

// close gives up a takeover: the inherited listeners are closed (the
// previous process still has them) and it keeps serving.
func (in *inherited) close() {
	if in == nil {
		return
	}
	for _, ln := range in.lns {
		_ = ln.Close()
	}
	in.lns = nil
	_ = in.conn.Close()
}

// handoff serves takeover requests on upgrade_socket.
type handoff struct {
	log *slog.Logger
	ln  *net.UnixListener
	// listeners are this process's listeners by name.
	listeners map[string]net.Listener
	// handed is closed when a new process has taken over.
	handed chan struct{}
}

// listenHandoff binds path atomically (a socket bound next to it, then
// renamed over it, so a previous process's socket at path is replaced
// without a moment where path is missing).
func listenHandoff(path string, log *slog.Logger, listeners map[string]net.Listener) (*handoff, error) {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d", filepath.Base(path), os.Getpid()))
	_ = os.Remove(tmp)
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("upgrade_socket %s: %w", path, err)
	}
	// The path outlives this listener when a successor renames its own
	// socket over it; closing must not remove the successor's.
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		_ = ul.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("upgrade_socket %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = ul.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("upgrade_socket %s: %w", path, err)
	}
	return &handoff{log: log, ln: ul, listeners: listeners, handed: make(chan struct{})}, nil
}

// serve answers takeover requests until one succeeds or ctx ends.
func (h *handoff) serve(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { _ = h.ln.Close() })
	defer stop()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			return
		}
		if h.answer(c) {
			close(h.handed)
			_ = h.ln.Close()
			return
		}
	}
}

// answer runs one exchange; it reports whether the new process took over.
func (h *handoff) answer(c *net.UnixConn) bool {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(takeoverTimeout))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != takeoverHello {
		h.log.Warn("upgrade socket: not a takeover request; ignored", "got", strings.TrimSpace(line), "err", err)
		return false
	}
	offer := takeoverOffer{PID: os.Getpid()}
	var fds []int
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for name, ln := range h.listeners {
		fl, ok := ln.(interface{ File() (*os.File, error) })
		if !ok {
			continue
		}
		f, err := fl.File()
		if err != nil {
			h.log.Warn("takeover: cannot hand over a listener", "name", name, "err", err)
			continue
		}
		files = append(files, f)
		fds = append(fds, int(f.Fd()))
		offer.Names = append(offer.Names, name)
	}
	msg, _ := json.Marshal(offer)
	if _, _, err := c.WriteMsgUnix(append(msg, '\n'), syscall.UnixRights(fds...), nil); err != nil {
		h.log.Warn("takeover: sending the listeners failed; still serving", "err", err)
		return false
	}
	h.log.Info("takeover: listeners handed to a new process; serving until it is ready", "listeners", offer.Names)
	line, err = r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "READY" {
		h.log.Warn("takeover: the new process did not get ready; still serving", "err", err)
		return false
	}
	if _, err := c.Write([]byte("BYE\n")); err != nil && !errors.Is(err, net.ErrClosed) {
		h.log.Debug("takeover: BYE not delivered", "err", err)
	}
	h.log.Info("takeover: the new process serves; shutting down gracefully")
	return true
}
