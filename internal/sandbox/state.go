package sandbox

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// state is the JSON form of a Server, enough to attach to it from another
// process. It holds the root password, so it is written 0600.
type state struct {
	PID          int       `json:"pid"`
	Port         int       `json:"port"`
	Addr         string    `json:"addr"`
	DataDir      string    `json:"datadir"`
	Socket       string    `json:"socket"`
	TmpDir       string    `json:"tmpdir,omitempty"`
	Flavor       Flavor    `json:"flavor"`
	Version      string    `json:"version"`
	Binary       string    `json:"binary,omitempty"`
	RootPassword string    `json:"root_password"`
	KeepDataDir  bool      `json:"keep_datadir,omitempty"`
	RemoveBase   string    `json:"remove_base_dir,omitempty"`
	StartedAt    time.Time `json:"started_at"`
}

// Save writes the server's state (pid, port, datadir, flavor, version, root
// password) to path, atomically and readable only by the owner.
func (s *Server) Save(path string) error {
	b, err := json.MarshalIndent(state{
		PID: s.PID, Port: s.Port, Addr: s.Addr, DataDir: s.DataDir, Socket: s.Socket, TmpDir: s.tmpDir,
		Flavor: s.Flavor, Version: s.Version, Binary: s.binary, RootPassword: s.rootPassword,
		KeepDataDir: s.keepDataDir, RemoveBase: s.removeBase, StartedAt: s.startedAt,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("sandbox: save state: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".sandbox-state-*")
	if err != nil {
		return fmt.Errorf("sandbox: save state: %w", err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("sandbox: save state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sandbox: save state: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("sandbox: save state: %w", err)
	}
	return nil
}

// Load attaches to a server from a state file written by Save. It does not
// check that the server still runs (see Alive). A missing file gives an
// error wrapping fs.ErrNotExist. Stop on the result stops that server.
func Load(path string) (*Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: load state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("sandbox: load state %s: %w", path, err)
	}
	if st.PID <= 0 || st.Port <= 0 || !filepath.IsAbs(st.DataDir) {
		return nil, fmt.Errorf("sandbox: load state %s: incomplete (pid %d, port %d, datadir %q)", path, st.PID, st.Port, st.DataDir)
	}
	if st.Addr == "" {
		st.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(st.Port))
	}
	return &Server{
		Addr: st.Addr, Port: st.Port, DataDir: st.DataDir, Socket: st.Socket, PID: st.PID,
		Flavor: st.Flavor, Version: st.Version,
		tmpDir: st.TmpDir, binary: st.Binary, rootPassword: st.RootPassword, keepDataDir: st.KeepDataDir,
		removeBase: st.RemoveBase, startedAt: st.StartedAt,
		stopTimeout: DefaultStopTimeout, log: slog.New(slog.DiscardHandler),
	}, nil
}
