package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseNetworks(t *testing.T) {
	got, err := ParseNetworks("loopback, 0.2ms,1ms")
	if want := []time.Duration{0, 200 * time.Microsecond, time.Millisecond}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseNetworks = %v, %v; want %v", got, err, want)
	}
	for _, in := range []string{"", "lan", "loopback,", "0.2"} {
		if _, err := ParseNetworks(in); !errors.Is(err, ErrBadRamp) {
			t.Errorf("ParseNetworks(%q): %v, want ErrBadRamp", in, err)
		}
	}
}

// TestDemoRefusesDelayedDSN: a delayed network runs private servers in
// namespaces, so it does not combine with --dsn or --keep.
func TestDemoRefusesDelayedDSN(t *testing.T) {
	for _, cfg := range []DemoConfig{
		{OutDir: t.TempDir(), DSN: "u:p@tcp(127.0.0.1:1)/d", Networks: []time.Duration{0, time.Millisecond}},
		{OutDir: t.TempDir(), Keep: true, SandboxDir: "x", StateFile: "y", Networks: []time.Duration{time.Millisecond}},
	} {
		if err := cfg.defaults(); err == nil || !strings.Contains(err.Error(), "not with --dsn or --keep") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}
