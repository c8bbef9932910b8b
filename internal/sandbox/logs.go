package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// exitError describes an early exit with the tail of the server's output.
func (s *Server) exitError() error {
	l := layout{dataDir: s.DataDir, tmpDir: s.tmpDir, port: s.Port}
	tail := logTail(l)
	err := fmt.Errorf("%w (%v); last lines of %s:\n%s", ErrExited, s.waitErr, l.errorLog(), tail)
	if strings.Contains(tail, "Address already in use") {
		// The server's message is the only signal there is for this.
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// logTail joins the last lines of the server's stdout/stderr capture and of
// its error log.
func logTail(l layout) string {
	var parts []string
	for _, p := range []string{l.stdoutFile(), l.errorLog()} {
		b, err := readTail(p, 8<<10)
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			parts = append(parts, tailLines(b, 15))
		}
	}
	if len(parts) == 0 {
		return "(no server output)"
	}
	return strings.Join(parts, "\n")
}

// readTail reads at most the last n bytes of path.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-n, 0)
	buf := make([]byte, fi.Size()-off)
	_, err = f.ReadAt(buf, off)
	return buf, err
}

// errorLines picks up to n lines that mention an error, as the install
// scripts bury them under a page of advice; without any it is tailLines.
func errorLines(b []byte, n int) string {
	var picked []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(strings.ToLower(line), "error") {
			picked = append(picked, line)
		}
	}
	if len(picked) == 0 {
		return tailLines(b, n)
	}
	if len(picked) > n {
		picked = picked[len(picked)-n:]
	}
	return strings.Join(picked, "\n")
}

// tailLines returns the last n lines of b.
func tailLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
