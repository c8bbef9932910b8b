package mysqlwire

import (
	"errors"
	"io"
)

// ErrLocalPacketTooLarge is returned by End when a packet built in place
// outgrew one physical packet; packets built in place are small by design.
var ErrLocalPacketTooLarge = errors.New("mysqlwire: packet built in place exceeds 16 MiB")

// Writer writes MySQL packets to a stream through a buffer.
//
// A Writer made with NewWriter borrows its buffer from a BufferPool on first
// use and gives it back on Release, so idle connections hold no buffer.
// Packets can be copied in whole (WriteRaw, WritePacket) or built in place
// between Begin and End with the Append methods, which never allocate while
// the packet fits in the buffer.
type Writer struct {
	wr    io.Writer
	buf   []byte
	big   *[]byte
	pool  *BufferPool
	start int // offset of the packet being built, -1 when none
	seq   uint8
	// ExtMetadata: the peer negotiated MARIADB_CLIENT_EXTENDED_METADATA,
	// so column definitions carry an extended type information field.
	ExtMetadata bool
}

// NewWriter returns a writer on wr that borrows its buffer from pool.
func NewWriter(wr io.Writer, pool *BufferPool) *Writer {
	w := new(Writer)
	w.Init(wr, pool)
	return w
}

// Init makes w what NewWriter returns, in place (a pooled writer). It
// must hold no buffer (Release).
func (w *Writer) Init(wr io.Writer, pool *BufferPool) {
	*w = Writer{wr: wr, pool: pool, start: -1}
}

// NewWriterSize returns a writer on wr with a resident buffer of size bytes.
func NewWriterSize(wr io.Writer, size int) *Writer {
	return &Writer{wr: wr, buf: make([]byte, 0, size), start: -1}
}

// Reset points the writer at a new stream and drops anything buffered.
func (w *Writer) Reset(wr io.Writer) {
	w.wr = wr
	if w.buf != nil {
		w.buf = w.buf[:0]
	}
	w.start = -1
}

// Seq is the sequence id the next packet will carry.
func (w *Writer) Seq() uint8 { return w.seq }

// SetSeq sets the sequence id the next packet will carry.
func (w *Writer) SetSeq(s uint8) { w.seq = s }

// Buffered is the number of bytes waiting to be flushed.
func (w *Writer) Buffered() int { return len(w.buf) }

func (w *Writer) acquire() {
	if w.buf == nil {
		w.big = w.pool.Get()
		w.buf = (*w.big)[:0]
	}
}

// Release gives a borrowed buffer back to the pool. Anything unflushed is
// dropped, so call it after Flush.
func (w *Writer) Release() {
	if w.pool == nil || w.buf == nil {
		return
	}
	if cap(w.buf) == cap(*w.big) {
		w.pool.Put(w.big)
	}
	w.buf, w.big = nil, nil
	w.start = -1
}

// Flush writes everything buffered to the stream.
func (w *Writer) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.wr.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// room makes n bytes available at the end of the buffer if that is possible
// by flushing; it reports whether they fit.
func (w *Writer) room(n int) (bool, error) {
	w.acquire()
	if len(w.buf)+n <= cap(w.buf) {
		return true, nil
	}
	if err := w.Flush(); err != nil {
		return false, err
	}
	return n <= cap(w.buf), nil
}

// WriteRaw writes a physical packet given with its header, stamping the
// writer's sequence id into the header (p is modified).
func (w *Writer) WriteRaw(p []byte) error {
	p[3] = w.seq
	w.seq++
	fits, err := w.room(len(p))
	if err != nil {
		return err
	}
	if !fits {
		_, err = w.wr.Write(p)
		return err
	}
	w.buf = append(w.buf, p...)
	return nil
}

// WritePacket writes a logical packet, splitting payloads of 16 MiB or more.
func (w *Writer) WritePacket(payload []byte) error {
	for {
		n := min(len(payload), MaxPayload)
		fits, err := w.room(HeaderSize + n)
		if err != nil {
			return err
		}
		// The header always goes through the buffer (a local array passed
		// to the stream would escape to the heap on every packet).
		w.buf = append(w.buf, byte(n), byte(n>>8), byte(n>>16), w.seq)
		w.seq++
		if fits {
			w.buf = append(w.buf, payload[:n]...)
		} else {
			if err := w.Flush(); err != nil {
				return err
			}
			if _, err := w.wr.Write(payload[:n]); err != nil {
				return err
			}
		}
		payload = payload[n:]
		if n < MaxPayload {
			return nil
		}
	}
}

// WritePacketParts writes one logical packet whose payload is a, b and c
// concatenated, splitting it at 16 MiB like WritePacket, without first
// copying the parts together.
func (w *Writer) WritePacketParts(a, b, c []byte) error {
	total := len(a) + len(b) + len(c)
	for {
		n := min(total, MaxPayload)
		fits, err := w.room(HeaderSize + n)
		if err != nil {
			return err
		}
		w.buf = append(w.buf, byte(n), byte(n>>8), byte(n>>16), w.seq)
		w.seq++
		if !fits {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		for left := n; left > 0; {
			part := &a
			switch {
			case len(a) > 0:
			case len(b) > 0:
				part = &b
			default:
				part = &c
			}
			k := min(left, len(*part))
			if fits {
				w.buf = append(w.buf, (*part)[:k]...)
			} else if _, err := w.wr.Write((*part)[:k]); err != nil {
				return err
			}
			*part = (*part)[k:]
			left -= k
		}
		total -= n
		if n < MaxPayload {
			return nil
		}
	}
}

// Begin starts a packet built in place with the Append methods.
func (w *Writer) Begin() {
	w.acquire()
	if cap(w.buf)-len(w.buf) < 512 && len(w.buf) > 0 {
		// Keep small packets whole in the buffer; a failed flush shows up
		// at the next Flush.
		_ = w.Flush()
	}
	w.start = len(w.buf)
	w.buf = append(w.buf, 0, 0, 0, 0)
}

// End finishes the packet started by Begin.
func (w *Writer) End() error {
	n := len(w.buf) - w.start - HeaderSize
	if n >= MaxPayload {
		w.buf = w.buf[:w.start]
		w.start = -1
		return ErrLocalPacketTooLarge
	}
	h := w.buf[w.start:]
	h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), w.seq
	w.seq++
	w.start = -1
	return nil
}

// AppendByte appends one byte to the packet being built.
func (w *Writer) AppendByte(b byte) { w.buf = append(w.buf, b) }

// AppendUint16 appends a little-endian 2-byte integer.
func (w *Writer) AppendUint16(v uint16) { w.buf = append(w.buf, byte(v), byte(v>>8)) }

// AppendUint32 appends a little-endian 4-byte integer.
func (w *Writer) AppendUint32(v uint32) {
	w.buf = append(w.buf, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// AppendBytes appends raw bytes.
func (w *Writer) AppendBytes(b []byte) { w.buf = append(w.buf, b...) }

// AppendString appends raw string bytes.
func (w *Writer) AppendString(s string) { w.buf = append(w.buf, s...) }

// AppendLenEncInt appends a length-encoded integer.
func (w *Writer) AppendLenEncInt(v uint64) { w.buf = AppendLenEncInt(w.buf, v) }

// AppendLenEncString appends a length-encoded string.
func (w *Writer) AppendLenEncString(b []byte) {
	w.buf = AppendLenEncInt(w.buf, uint64(len(b)))
	w.buf = append(w.buf, b...)
}
