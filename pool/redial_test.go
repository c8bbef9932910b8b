package pool

import (
	"testing"
	"time"
)

// TestRedialWait: the filler's waits between failed dials double from
// redialMin to redialMax, each within ±redialJitter, and differ from
// pool to pool (replicas do not redial in step).
func TestRedialWait(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Addr, cfg.User = "127.0.0.1:3306", "u"
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := redialMin
	for k := range 10 {
		got := p.redialWait.NextBackOff()
		lo := time.Duration(float64(want) * (1 - redialJitter))
		hi := time.Duration(float64(want) * (1 + redialJitter))
		if got < lo || got > hi {
			t.Errorf("wait %d: %v, want %v ±%.0f%%", k, got, want, redialJitter*100)
		}
		want = min(2*want, redialMax)
	}
	p.redialWait.Reset()
	if got := p.redialWait.NextBackOff(); got > time.Duration(float64(redialMin)*(1+redialJitter)) {
		t.Errorf("after a successful dial: %v, want about %v", got, redialMin)
	}
	firsts := make(map[time.Duration]bool)
	for range 20 {
		p.redialWait.Reset()
		firsts[p.redialWait.NextBackOff()] = true
	}
	if len(firsts) < 10 {
		t.Errorf("20 first waits take %d values: no jitter", len(firsts))
	}
}
