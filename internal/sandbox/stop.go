package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// kill ends a server that failed to become ready; nothing is worth a clean
// shutdown there.
func (s *Server) kill() {
	if s.exited == nil {
		return
	}
	if err := s.signal(syscall.SIGKILL); err != nil {
		s.log.Warn("kill server", "pid", s.PID, "err", err)
	}
	<-s.exited // SIGKILL cannot be ignored; the reaper goroutine returns promptly
}

// cleanup removes what Start created: the tmpdir, a temporary BaseDir and,
// if dataToo, the datadir. dataToo is false for a datadir Start did not
// create.
func (s *Server) cleanup(dataToo bool) {
	if s.keepDataDir {
		return
	}
	if dataToo {
		if err := removeDataDir(s.DataDir, s.createdDataDir); err != nil {
			s.log.Warn("remove datadir", "datadir", s.DataDir, "err", err)
		}
	}
	if s.tmpDir != "" {
		if err := removeTmpDir(s.tmpDir); err != nil {
			s.log.Warn("remove tmpdir", "tmpdir", s.tmpDir, "err", err)
		}
	}
	if s.removeBase != "" {
		if err := os.RemoveAll(s.removeBase); err != nil {
			s.log.Warn("remove base dir", "dir", s.removeBase, "err", err)
		}
	}
}

// removeTmpDir deletes the server's tmpdir (BaseDir/tmp), refusing
// top-level paths such as /tmp itself.
func removeTmpDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Dir(filepath.Dir(dir)) == filepath.Dir(dir) {
		return fmt.Errorf("sandbox: refusing to remove tmpdir %q", dir)
	}
	return os.RemoveAll(dir)
}

// removeDataDir deletes a sandbox datadir. Unless this process created it,
// it must hold the sandbox's option file: a state file edited by hand must
// not get a real server's datadir wiped.
func removeDataDir(dir string, created bool) error {
	if dir == "" || !filepath.IsAbs(dir) || filepath.Dir(dir) == dir {
		return fmt.Errorf("sandbox: refusing to remove datadir %q", dir)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 && !created {
		if _, err := os.Stat(layout{dataDir: dir}.optionFile()); err != nil {
			return fmt.Errorf("sandbox: refusing to remove %s: not a sandbox datadir: %w", dir, err)
		}
	}
	return os.RemoveAll(dir)
}

// Stop sends SIGTERM, waits up to Options.StopTimeout (or until ctx ends)
// for the server to exit, then sends SIGKILL; it then removes the datadir
// unless KeepDataDir was set. A server that is already gone is only cleaned
// up. Stop may be called more than once; later calls return the first
// result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.stopped {
		return s.stopErr
	}
	err := s.terminate(ctx)
	if s.Alive() {
		return err // let a later Stop try again
	}
	s.cleanup(true)
	s.stopped = true
	s.stopErr = err
	return err
}

// terminate ends the process: SIGTERM, bounded wait, SIGKILL.
func (s *Server) terminate(ctx context.Context) error {
	if !s.Alive() {
		return nil
	}
	begin := time.Now()
	if err := s.signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sandbox: stop pid %d: %w", s.PID, err)
	}
	bound := s.stopTimeout
	if bound <= 0 {
		bound = DefaultStopTimeout
	}
	termCtx, cancel := context.WithTimeout(ctx, bound)
	err := s.waitExit(termCtx)
	cancel()
	if err == nil {
		s.log.Info("sandbox server stopped", "pid", s.PID, "elapsed", time.Since(begin).Round(time.Millisecond))
		return nil
	}
	s.log.Warn("server still running after StopTimeout, sending SIGKILL", "pid", s.PID, "waited", time.Since(begin).Round(time.Millisecond))
	if err := s.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("sandbox: kill pid %d: %w", s.PID, err)
	}
	// SIGKILL takes effect at once unless the process is stuck in the
	// kernel; do not wait forever for that.
	killCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.waitExit(killCtx); err != nil {
		return fmt.Errorf("sandbox: pid %d survived SIGKILL: %w", s.PID, err)
	}
	return ctx.Err() // nil when only the StopTimeout expired
}

// signal sends sig to the server. For an owned child it goes through
// os.Process, which knows when the pid has been reaped and may be reused.
func (s *Server) signal(sig syscall.Signal) error {
	if s.proc == nil {
		return signalPID(s.PID, sig)
	}
	if err := s.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// waitExit waits for the process to go away.
func (s *Server) waitExit(ctx context.Context) error {
	if s.exited != nil {
		select {
		case <-s.exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Not our child: nothing to wait on but the pid itself.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if !pidRunning(s.PID, s.DataDir) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Alive reports whether the server process is running. For a server
// attached with Load it also checks that the pid still belongs to a server
// of this datadir.
func (s *Server) Alive() bool {
	if s.exited != nil {
		select {
		case <-s.exited:
			return false
		default:
			return true
		}
	}
	return pidRunning(s.PID, s.DataDir)
}
