// Package mysqlwire holds the MySQL client/server packet framing and the
// packet helpers tpproxy needs beyond go-mysql: a buffered reader that can
// hand out packets without copying, a writer that builds packets in place,
// and parsers for the OK, ERR and EOF packets.
package mysqlwire

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// MaxPayload is the largest payload of one physical packet; a logical packet
// of this size or more continues in the next physical packet.
const MaxPayload = 1<<24 - 1

// HeaderSize is the size of a packet header: 3 bytes length, 1 byte sequence.
const HeaderSize = 4

var (
	// ErrPacketTooLarge is returned by ReadPacket when a logical packet is
	// larger than the reader's limit (max_allowed_packet).
	ErrPacketTooLarge = errors.New("mysqlwire: packet bigger than max_allowed_packet")
	// ErrSequence is returned when a packet arrives with an unexpected
	// sequence id: the peers disagree about where they are in the protocol.
	ErrSequence = errors.New("mysqlwire: packet out of order")
)

// BufferPool hands out large read/write buffers to connections that only
// need them while a command is in flight, so idle connections hold little.
type BufferPool struct {
	size int
	p    sync.Pool
}

// NewBufferPool returns a pool of buffers of the given size.
func NewBufferPool(size int) *BufferPool {
	bp := &BufferPool{size: size}
	bp.p.New = func() any {
		b := make([]byte, size)
		return &b
	}
	return bp
}

// Get returns a buffer of the pool's size.
func (bp *BufferPool) Get() *[]byte { return bp.p.Get().(*[]byte) }

// Put returns a buffer obtained from Get.
func (bp *BufferPool) Put(b *[]byte) { bp.p.Put(b) }

// Size is the length of the pool's buffers.
func (bp *BufferPool) Size() int { return bp.size }

// Reader reads MySQL packets from a stream.
//
// It keeps a small buffer of its own and borrows a large one from a
// BufferPool only when a packet does not fit; Shrink gives the large buffer
// back once everything buffered has been consumed. Slices returned by the
// read methods point into the buffer and stay valid until the next call.
type Reader struct {
	rd    io.Reader
	small []byte
	buf   []byte
	big   *[]byte
	pool  *BufferPool
	r, w  int
	seq   uint8

	// joined holds a logical packet assembled from several physical ones;
	// joining: ReadPacket stopped (an error) in the middle of one.
	joined  []byte
	joining bool

	// MaxPacket bounds the logical packets ReadPacket accepts; 0 means no bound.
	MaxPacket int

	// Budget, when set, is charged with every byte of buffer the reader
	// holds beyond its resident one (charged), and makes the reader wait
	// when the budget is spent.
	Budget  *Budget
	charged int64
}

// Budget bounds the memory a set of readers holds in packet buffers
// beyond their resident ones. A reader that needs more waits (at most
// budgetWait) for others to give theirs back; one holding nothing
// beyond its resident buffer may always take the first step, so that a
// budget smaller than a packet slows readers but never stops them all.
type Budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
	peak  int64
}

// budgetWait bounds a reader's wait for the budget: past it the read
// fails with ErrBudget.
var budgetWait = 10 * time.Second

// ErrBudget is returned by a read that waited longer than budgetWait for
// buffer memory.
var ErrBudget = errors.New("mysqlwire: packet buffer memory exhausted (max_buffer_memory)")

// NewBudget returns a budget of limit bytes (0 or less: no limit).
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// SetLimit changes the limit; waiting readers try again.
func (b *Budget) SetLimit(limit int64) {
	b.mu.Lock()
	b.limit = limit
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Used is the memory charged now; Limit the bound.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Limit is the budget's bound (0 or less: none).
func (b *Budget) Limit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// TakePeak returns the highest use since the last call and starts over
// from the current one.
func (b *Budget) TakePeak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peak
	b.peak = b.used
	return p
}

// acquire charges n bytes to a reader that holds held already, waiting
// while that would go over the limit.
func (b *Budget) acquire(n, held int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var timer *time.Timer
	expired := false
	for b.limit > 0 && b.used+n > b.limit && held > 0 {
		if timer == nil {
			timer = time.AfterFunc(budgetWait, func() {
				b.mu.Lock()
				expired = true
				b.mu.Unlock()
				b.cond.Broadcast()
			})
			defer timer.Stop()
		}
		if expired {
			return ErrBudget
		}
		b.cond.Wait()
	}
	b.used += n
	if b.used > b.peak {
		b.peak = b.used
	}
	return nil
}

// Take charges n bytes held outside a Reader (a prepared statement's long
// data, say) by an owner that holds held already, waiting as a reader does
// while that would go over the limit; past budgetWait it returns
// ErrBudget and charges nothing. A nil budget charges nothing.
func (b *Budget) Take(n, held int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	return b.acquire(n, held)
}

// Give gives back n bytes charged by Take.
func (b *Budget) Give(n int64) {
	if b != nil {
		b.release(n)
	}
}

// release gives n bytes back.
func (b *Budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// charge moves the reader's charge to total bytes.
func (r *Reader) charge(total int64) error {
	if r.Budget == nil {
		return nil
	}
	switch d := total - r.charged; {
	case d > 0:
		if err := r.Budget.acquire(d, r.charged); err != nil {
			return err
		}
	case d < 0:
		r.Budget.release(-d)
	}
	r.charged = total
	return nil
}

// chargeJoined charges the reader for its buffers with a joined buffer of
// capacity c in place of the one it has, before that one is made.
func (r *Reader) chargeJoined(c int) error {
	return r.charge(r.extra(len(r.buf)) - int64(cap(r.joined)) + int64(c))
}

// extra is what the reader holds beyond its resident buffer.
func (r *Reader) extra(bufLen int) int64 {
	n := int64(cap(r.joined))
	if bufLen != len(r.small) {
		n += int64(bufLen)
	}
	return n
}

// NewReader returns a reader on rd that uses small as its resident buffer and
// borrows from pool when a packet needs more room. pool may be nil, in which
// case the reader grows its own buffer and keeps it.
func NewReader(rd io.Reader, small []byte, pool *BufferPool) *Reader {
	r := new(Reader)
	r.Init(rd, small, pool)
	return r
}

// Init makes r what NewReader returns, in place: a reader kept in a pool
// is set up for a new stream with it. Whatever r held is forgotten, so
// it must hold nothing beyond small (Shrink, SetSmall(nil)).
func (r *Reader) Init(rd io.Reader, small []byte, pool *BufferPool) {
	*r = Reader{rd: rd, small: small, buf: small, pool: pool}
}

// SetSmall replaces the resident buffer by small (nil: none, so that any
// packet borrows from the pool) and returns the one it had. Nothing may be
// buffered (InPacket false). A reader that sits idle for long gives its
// buffer back this way.
func (r *Reader) SetSmall(small []byte) []byte {
	r.Shrink()
	old := r.small
	r.small, r.buf = small, small
	r.r, r.w = 0, 0
	return old
}

// TakeBuffered returns a copy of the bytes read from the stream but not
// consumed, and forgets them. A connection switching protocols (TLS after
// an SSLRequest) hands them to the new layer.
func (r *Reader) TakeBuffered() []byte {
	b := append([]byte(nil), r.buf[r.r:r.w]...)
	r.r, r.w = 0, 0
	return b
}

// Reset points the reader at a new stream and drops anything buffered.
func (r *Reader) Reset(rd io.Reader) {
	r.rd = rd
	r.r, r.w = 0, 0
	r.joining = false
	r.Shrink()
}

// Seq is the sequence id the next packet is expected to carry.
func (r *Reader) Seq() uint8 { return r.seq }

// SetSeq sets the sequence id the next packet is expected to carry.
func (r *Reader) SetSeq(s uint8) { r.seq = s }

// Buffered is the number of bytes read from the stream but not consumed.
func (r *Reader) Buffered() int { return r.w - r.r }

// Shrink returns a borrowed or grown buffer when nothing is buffered, so an
// idle connection keeps only its small buffer.
func (r *Reader) Shrink() {
	defer func() { _ = r.charge(r.extra(len(r.buf))) }()
	if cap(r.joined) > 64<<10 && !r.joining {
		r.joined = nil
	}
	if r.r != r.w {
		return
	}
	r.r, r.w = 0, 0
	if len(r.buf) == len(r.small) {
		return
	}
	r.buf = r.small
	if r.big != nil {
		r.pool.Put(r.big)
		r.big = nil
	}
}

// Drop forgets whatever is buffered and gives back every buffer beyond the
// resident one (and its charge), for a reader whose stream is done.
func (r *Reader) Drop() {
	r.r, r.w = 0, 0
	r.joining = false
	r.joined = nil
	r.Shrink()
}

// growStep is the least a full buffer grows by.
const growStep = 16 << 10

// ensure makes n bytes available in the buffer, reading as needed. The
// buffer grows as bytes arrive, never to what a header claims before its
// bytes are there: a peer that announces 16 MiB and sends 4 KiB makes the
// reader hold a few KiB, not 16 MiB.
func (r *Reader) ensure(n int) error {
	if r.w-r.r >= n {
		return nil
	}
	if r.r > 0 && r.r+n > len(r.buf) {
		// Not enough room after the unread bytes: move them to the front.
		copy(r.buf, r.buf[r.r:r.w])
		r.w -= r.r
		r.r = 0
	}
	for r.w-r.r < n {
		if r.w == len(r.buf) {
			// Full, and the packet wants more: room for what may come
			// next, at most twice what arrived so far.
			if err := r.grow(min(n, max(2*len(r.buf), r.w+growStep))); err != nil {
				return err
			}
		}
		m, err := r.rd.Read(r.buf[r.w:])
		r.w += m
		if err != nil {
			if r.w-r.r >= n {
				return nil
			}
			if errors.Is(err, io.EOF) && r.w-r.r > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// grow replaces the buffer by one of at least n bytes, keeping unread data.
// Without a pool the grown buffer becomes the resident one.
func (r *Reader) grow(n int) error {
	pooled := r.pool != nil && n <= r.pool.Size()
	size := n
	if pooled {
		size = r.pool.Size()
	}
	if err := r.charge(r.extra(size)); err != nil {
		return err
	}
	var nb []byte
	var big *[]byte
	if pooled {
		big = r.pool.Get()
		nb = *big
	} else {
		nb = make([]byte, n)
	}
	copy(nb, r.buf[r.r:r.w])
	r.w -= r.r
	r.r = 0
	if r.big != nil {
		r.pool.Put(r.big)
	}
	if r.pool == nil {
		r.small = nb
	}
	r.buf = nb
	r.big = big
	return nil
}

// Fill blocks until at least one more byte is buffered without consuming
// anything or moving what is buffered, so slices handed out by the last
// read stay valid. It lets a watcher notice that the peer went away while
// the owner of the reader is busy elsewhere; the owner must not use the
// reader until Fill has returned.
func (r *Reader) Fill() error {
	if r.w == len(r.buf) {
		return nil // no room without moving data; the peer is clearly talking
	}
	m, err := r.rd.Read(r.buf[r.w:])
	r.w += m
	return err
}

// NextSeq waits for the next packet's header and returns its sequence id
// without consuming anything: for a reply whose place in the exchange is
// not known (an ERR the peer sent before it read all of a request).
func (r *Reader) NextSeq() (uint8, error) {
	if err := r.ensure(HeaderSize); err != nil {
		return 0, err
	}
	return r.buf[r.r+3], nil
}

// ReadRaw reads one physical packet and returns it with its header. The
// header's sequence id is checked against Seq.
func (r *Reader) ReadRaw() ([]byte, error) {
	if err := r.ensure(HeaderSize); err != nil {
		return nil, err
	}
	h := r.buf[r.r : r.r+HeaderSize]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if h[3] != r.seq {
		return nil, fmt.Errorf("%w: got sequence %d, want %d", ErrSequence, h[3], r.seq)
	}
	if err := r.ensure(HeaderSize + n); err != nil {
		return nil, err
	}
	p := r.buf[r.r : r.r+HeaderSize+n]
	r.r += HeaderSize + n
	r.seq++
	return p, nil
}

// ReadPacket reads one logical packet (joining the physical packets of a
// payload of 16 MiB or more) and returns its payload. A packet of MaxPacket
// bytes or more yields ErrPacketTooLarge before its payload is read.
//
// A read error (a deadline, say) leaves what was read buffered: the next
// call goes on with the same packet.
func (r *Reader) ReadPacket() ([]byte, error) {
	if !r.joining {
		if err := r.checkSize(0); err != nil {
			return nil, err
		}
		raw, err := r.ReadRaw()
		if err != nil {
			return nil, err
		}
		payload := raw[HeaderSize:]
		if len(payload) < MaxPayload {
			return payload, nil
		}
		if err := r.chargeJoined(max(cap(r.joined), 2*len(payload))); err != nil {
			return nil, err
		}
		r.joined = append(r.joined[:0], payload...)
		r.joining = true
	}
	for {
		if err := r.checkSize(len(r.joined)); err != nil {
			// Only a packet over the limit ends it; a read error (a
			// deadline while the next header is on its way) leaves it to
			// the next call, like one inside a physical packet.
			if errors.Is(err, ErrPacketTooLarge) {
				r.joining = false
			}
			return nil, err
		}
		raw, err := r.ReadRaw()
		if err != nil {
			return nil, err
		}
		part := raw[HeaderSize:]
		if need := len(r.joined) + len(part); need > cap(r.joined) {
			if err := r.chargeJoined(2 * need); err != nil {
				return nil, err
			}
			r.joined = append(make([]byte, 0, 2*need), r.joined...)
		}
		r.joined = append(r.joined, part...)
		if len(part) < MaxPayload {
			r.joining = false
			return r.joined, nil
		}
	}
}

// InPacket reports whether part of a packet has been read: the next
// ReadPacket goes on with it.
func (r *Reader) InPacket() bool { return r.joining || r.w > r.r }

// checkSize looks at the next header and fails when the packet would take
// the logical packet to MaxPacket or beyond: the server refuses a payload of
// max_allowed_packet bytes (net_realloc's "length >= max_packet_size").
func (r *Reader) checkSize(have int) error {
	if r.MaxPacket <= 0 {
		return nil
	}
	if err := r.ensure(HeaderSize); err != nil {
		return err
	}
	h := r.buf[r.r:]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if have+n >= r.MaxPacket {
		return ErrPacketTooLarge
	}
	return nil
}

// HasPacket reports whether a whole physical packet is buffered, so the
// next ReadRaw will not block.
func (r *Reader) HasPacket() bool {
	if r.w-r.r < HeaderSize {
		return false
	}
	h := r.buf[r.r:]
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	return r.w-r.r >= HeaderSize+n
}
