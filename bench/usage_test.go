package bench

import (
	"testing"
	"time"
)

func TestClientCPU(t *testing.T) {
	c := clientCPU(rusage{user: time.Second, sys: time.Second}, rusage{user: 3 * time.Second, sys: 2 * time.Second}, 2*time.Second)
	if c.UserSec != 2 || c.SystemSec != 1 || c.Pct != 150 {
		t.Errorf("client CPU %+v, want 2 s user, 1 s system, 150 %%", c)
	}
}
