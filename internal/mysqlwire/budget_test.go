package mysqlwire

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// trickle is a stream that has sent only part of a packet and then blocks
// (returns what it has, then waits until closed).
type trickle struct {
	data []byte
	gate chan struct{}
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.data) == 0 {
		<-t.gate
		return 0, io.EOF
	}
	n := copy(p, t.data)
	t.data = t.data[n:]
	return n, nil
}

// A header that claims 16 MiB and 4 KiB of payload: the reader holds a
// few KiB, not 16 MiB.
func TestReaderGrowsWithBytesReceived(t *testing.T) {
	src := &trickle{data: append([]byte{0xff, 0xff, 0xff, 0}, make([]byte, 4<<10)...), gate: make(chan struct{})}
	b := NewBudget(0)
	r := NewReader(src, make([]byte, 512), NewBufferPool(16<<10))
	r.Budget = b
	done := make(chan error, 1)
	go func() { _, err := r.ReadRaw(); done <- err }()
	time.Sleep(100 * time.Millisecond)
	if n := b.Used(); n > 64<<10 {
		t.Fatalf("a 16 MiB header with 4 KiB sent holds %d bytes", n)
	}
	close(src.gate)
	if err := <-done; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadRaw = %v", err)
	}
	r.Drop()
	if n := b.Used(); n != 0 {
		t.Fatalf("after Drop the budget still holds %d", n)
	}
}

// A whole large packet is read, every byte, growing on the way; the charge
// goes back with Shrink.
func TestReaderLargePacketAndBudget(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 3<<20)
	pkt := append([]byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), 0}, payload...)
	b := NewBudget(64 << 20)
	r := NewReader(bytes.NewReader(pkt), make([]byte, 512), NewBufferPool(16<<10))
	r.Budget = b
	p, err := r.ReadPacket()
	if err != nil || !bytes.Equal(p, payload) {
		t.Fatalf("ReadPacket: %d bytes, %v", len(p), err)
	}
	if n := b.Used(); n < int64(len(payload)) || n > 2*int64(len(payload))+64<<10 {
		t.Errorf("charged %d for a %d-byte packet", n, len(payload))
	}
	r.Shrink()
	if n := b.Used(); n != 0 {
		t.Errorf("after Shrink the budget holds %d", n)
	}
}

// A spent budget makes a reader that already holds some wait, and fail with
// ErrBudget when nothing comes back in time; one holding nothing beyond its
// resident buffer takes its first step anyway.
func TestBudgetWaits(t *testing.T) {
	old := budgetWait
	budgetWait = 200 * time.Millisecond
	defer func() { budgetWait = old }()
	b := NewBudget(1 << 20)
	if err := b.acquire(1<<20, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(16<<10, 0); err != nil {
		t.Fatalf("a first step over the limit: %v", err)
	}
	start := time.Now()
	if err := b.acquire(16<<10, 16<<10); !errors.Is(err, ErrBudget) {
		t.Fatalf("acquire over the limit = %v, want ErrBudget", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("gave up after %s without waiting", d)
	}
	// Memory given back lets a waiter go on.
	go func() {
		time.Sleep(50 * time.Millisecond)
		b.release(1 << 20)
	}()
	if err := b.acquire(16<<10, 16<<10); err != nil {
		t.Fatalf("acquire after a release: %v", err)
	}
}
