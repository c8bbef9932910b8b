package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

const (
	// CompressHeaderSize is the size of a compressed packet header: 3 bytes
	// compressed length, 1 byte compressed sequence id, 3 bytes length
	// before compression (0 when the payload is sent as is).
	CompressHeaderSize = 7
	// MinCompressLength is MySQL's MIN_COMPRESS_LENGTH: shorter payloads
	// are never compressed.
	MinCompressLength = 50
	// DefaultZstdLevel is the zstd level MySQL uses when none is given.
	DefaultZstdLevel = 3

	// maxCompressPayload bounds the bytes a compressed packet carries, before
	// and after compression (both lengths are 3 bytes).
	maxCompressPayload = 1<<24 - 1
	// compressInitialRead is the size of the read buffer when it is first
	// needed.
	compressInitialRead = 8 << 10
	// compressRetain is the largest buffer kept once a packet has been
	// consumed or written; larger ones are dropped so an idle connection
	// holds little.
	compressRetain = 256 << 10
)

// CompressAlgo is a compression algorithm of the compressed protocol.
type CompressAlgo uint8

// Compression algorithms.
const (
	CompressNone CompressAlgo = iota
	CompressZlib
	CompressZstd
)

func (a CompressAlgo) String() string {
	switch a {
	case CompressNone:
		return "none"
	case CompressZlib:
		return "zlib"
	case CompressZstd:
		return "zstd"
	}
	return fmt.Sprintf("CompressAlgo(%d)", uint8(a))
}

// NegotiatedCompression is the algorithm a connection uses after the
// handshake, given the capabilities both sides agreed on: zlib when
// CLIENT_COMPRESS is set (it wins over zstd, as in MySQL), zstd when only
// CLIENT_ZSTD_COMPRESSION_ALGORITHM is, none otherwise.
func NegotiatedCompression(caps uint32) CompressAlgo {
	switch {
	case caps&ClientCompress != 0:
		return CompressZlib
	case caps&ClientZstdCompressionAlgorithm != 0:
		return CompressZstd
	}
	return CompressNone
}

// CompressMode says which end of the connection a CompressConn is; it
// decides how compressed sequence ids are followed.
type CompressMode uint8

const (
	// CompressServer: every compressed packet read sets the sequence id of
	// the next packet written to its own plus one, whatever it was (clients
	// restart at 0 with each command).
	CompressServer CompressMode = iota
	// CompressClient: the client calls ResetSeq before each command. Like
	// libmysql (net_read_packet_header checks the compressed header against
	// the counter net_flush synced), a packet read must carry the next
	// sequence id: the one after the last packet written or read. Anything
	// else fails with ErrSequence.
	CompressClient
)

// ErrCompressedPacket is returned by CompressConn.Read for a compressed
// packet that cannot be valid: bad compressed data, or a payload that does
// not decompress to the length its header announces. The connection is
// unusable afterwards: every later Read returns the same error.
var ErrCompressedPacket = errors.New("mysqlwire: malformed compressed packet")

// CompressConn is a net.Conn that speaks the MySQL compressed protocol on
// top of another one: Write wraps the bytes given (ordinary packets, headers
// included) in compressed packets, Read returns the ordinary packet stream
// carried by the compressed packets read.
//
// As with net.Conn, one goroutine may Read while another Writes; the two
// sides share only the compressed sequence id, which is atomic. A Read of a
// packet split across compressed packets, or of several packets in one,
// works as on a plain stream.
type CompressConn struct {
	nc   net.Conn
	algo CompressAlgo
	mode CompressMode
	zenc *zstd.Encoder // shared, safe for concurrent EncodeAll
	seq  atomic.Uint32 // next compressed sequence id to write (low 8 bits)
	_    [64]byte      // keep the reader's fields off the writer's cache line

	// Reader side.
	rbuf []byte // compressed bytes read from nc: rbuf[r:w] not consumed
	r, w int
	out  []byte // decompressed bytes not yet returned (into dbuf or rbuf)
	dbuf []byte // decompression buffer
	rerr error  // sticky protocol error

	_ [64]byte

	// Writer side.
	wbuf []byte // header and payload of the packet being written
	werr error  // sticky write error: the stream is cut mid-packet
}

// NewCompressConn wraps nc in the compressed protocol with algorithm algo
// (CompressZlib or CompressZstd; anything else panics). level is the zstd
// level from the handshake response (1..22, mapped to the nearest of
// klauspost's four levels; 0 means MySQL's default 3, above 22 means 22);
// zlib ignores it and always uses zlib.DefaultCompression, as MySQL uses
// zlib's default.
func NewCompressConn(nc net.Conn, algo CompressAlgo, level int, mode CompressMode) *CompressConn {
	return NewCompressConnBuffered(nc, algo, level, mode, nil)
}

// NewCompressConnBuffered is NewCompressConn for a connection some of whose
// compressed bytes were already read from nc before the switch (what
// Reader.TakeBuffered returns): pre is read first. pre is copied.
func NewCompressConnBuffered(nc net.Conn, algo CompressAlgo, level int, mode CompressMode, pre []byte) *CompressConn {
	c := &CompressConn{nc: nc, algo: algo, mode: mode}
	switch algo {
	case CompressZlib:
	case CompressZstd:
		c.zenc = zstdEncoder(level)
	default:
		panic("mysqlwire: NewCompressConn: unsupported algorithm " + algo.String())
	}
	if len(pre) > 0 {
		c.rbuf = make([]byte, max(len(pre), compressInitialRead))
		c.w = copy(c.rbuf, pre)
	}
	return c
}

// NetConn returns the connection CompressConn wraps.
func (c *CompressConn) NetConn() net.Conn { return c.nc }

// Algorithm returns the compression algorithm in use.
func (c *CompressConn) Algorithm() CompressAlgo { return c.algo }

// ResetSeq restarts the compressed sequence at 0, as a client does before
// each command.
func (c *CompressConn) ResetSeq() { c.seq.Store(0) }

// Seq is the compressed sequence id the next packet written will carry.
func (c *CompressConn) Seq() uint8 { return uint8(c.seq.Load()) }

// Buffered is the number of bytes read from the wrapped connection and not
// yet returned by Read: decompressed bytes pending plus compressed packets
// not yet decoded. The latter may be an incomplete packet, so a positive
// count does not promise that Read will not block; 0 means it will. Call
// it from the reading goroutine.
func (c *CompressConn) Buffered() int { return len(c.out) + c.w - c.r }

// Close closes the wrapped connection.
func (c *CompressConn) Close() error { return c.nc.Close() }

// LocalAddr returns the wrapped connection's local address.
func (c *CompressConn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr returns the wrapped connection's remote address.
func (c *CompressConn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// SetDeadline sets the wrapped connection's deadlines.
func (c *CompressConn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// SetReadDeadline sets the wrapped connection's read deadline. A Read that
// times out in the middle of a compressed packet keeps what it has read; a
// later Read carries on.
func (c *CompressConn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// SetWriteDeadline sets the wrapped connection's write deadline.
func (c *CompressConn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// Read reads decompressed stream bytes into p. It returns the rest of the
// current compressed packet, or reads the next one: at most one compressed
// packet is read from the wrapped connection per call (more may be
// buffered). Errors of the wrapped connection are returned as they come
// (io.EOF only between compressed packets; io.ErrUnexpectedEOF inside one);
// malformed packets yield an ErrCompressedPacket or ErrSequence error that
// sticks.
func (c *CompressConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(c.out) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		n, err := c.readPacket(p)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			c.shrinkRead()
			return n, nil
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	if len(c.out) == 0 {
		c.out = nil
		c.shrinkRead()
	}
	return n, nil
}

// readPacket reads one compressed packet. Its payload is either
// decompressed straight into p (when it fits; the length is returned) or
// left in c.out.
func (c *CompressConn) readPacket(p []byte) (int, error) {
	if err := c.fill(CompressHeaderSize); err != nil {
		return 0, err
	}
	h := c.rbuf[c.r : c.r+CompressHeaderSize]
	clen := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	seq := h[3]
	ulen := int(h[4]) | int(h[5])<<8 | int(h[6])<<16
	if c.mode == CompressClient {
		if want := uint8(c.seq.Load()); seq != want {
			c.rerr = fmt.Errorf("%w: got compressed sequence %d, want %d", ErrSequence, seq, want)
			return 0, c.rerr
		}
	}
	if err := c.fill(CompressHeaderSize + clen); err != nil {
		return 0, err
	}
	payload := c.rbuf[c.r+CompressHeaderSize : c.r+CompressHeaderSize+clen]
	c.r += CompressHeaderSize + clen
	c.seq.Store(uint32(seq) + 1)
	if ulen == 0 {
		c.out = payload
		return 0, nil
	}
	var dst []byte
	direct := len(p) >= ulen
	if direct {
		dst = p[:ulen]
	} else {
		if cap(c.dbuf) < ulen {
			c.dbuf = make([]byte, max(ulen, min(2*cap(c.dbuf), maxCompressPayload), 32<<10))
		}
		dst = c.dbuf[:ulen]
	}
	var err error
	if c.algo == CompressZlib {
		err = inflateZlib(dst, payload)
	} else {
		err = inflateZstd(dst, payload)
	}
	if err != nil {
		c.rerr = err
		return 0, err
	}
	if direct {
		return ulen, nil
	}
	c.out = dst
	return 0, nil
}

// fill makes n bytes available in rbuf[r:], reading from nc as needed. The
// buffer grows with what actually arrives, never at once to what a header
// claims, and n is at most one compressed packet (16 MiB + 6).
func (c *CompressConn) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	if c.r > 0 && c.r+n > len(c.rbuf) {
		copy(c.rbuf, c.rbuf[c.r:c.w])
		c.w -= c.r
		c.r = 0
	}
	for empty := 0; c.w-c.r < n; {
		if c.w == len(c.rbuf) {
			c.growRead(n)
		}
		m, err := c.nc.Read(c.rbuf[c.w:])
		c.w += m
		if m == 0 && err == nil {
			if empty++; empty == 100 {
				return io.ErrNoProgress
			}
		}
		if err != nil {
			if c.w-c.r >= n {
				return nil
			}
			if errors.Is(err, io.EOF) && c.w-c.r > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// growRead doubles the read buffer, up to what n unread bytes need.
func (c *CompressConn) growRead(n int) {
	size := max(2*len(c.rbuf), compressInitialRead)
	size = min(size, max(n, compressInitialRead))
	nb := make([]byte, size)
	c.w = copy(nb, c.rbuf[c.r:c.w])
	c.r = 0
	c.rbuf = nb
}

// shrinkRead drops large buffers once nothing in them is pending.
func (c *CompressConn) shrinkRead() {
	if len(c.out) != 0 {
		return
	}
	if cap(c.dbuf) > compressRetain {
		c.dbuf = nil
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
		if cap(c.rbuf) > compressRetain {
			c.rbuf = nil
		}
	}
}

// Write wraps p in compressed packets of at most 16 MiB - 1 bytes of p each
// and writes them: one write on the wrapped connection per compressed
// packet, so one write for a p below 16 MiB. Payloads under
// MinCompressLength bytes, and those that do not shrink, are sent as they
// are. An error of the wrapped connection sticks (the stream may be cut in
// the middle of a packet); the count returned is the bytes of p whose
// compressed packets were written whole.
func (c *CompressConn) Write(p []byte) (int, error) {
	if c.werr != nil {
		return 0, c.werr
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), maxCompressPayload)
		if err := c.writePacket(p[:n]); err != nil {
			c.werr = err
			c.shrinkWrite()
			return written, err
		}
		written += n
		p = p[n:]
	}
	c.shrinkWrite()
	return written, nil
}

func (c *CompressConn) writePacket(chunk []byte) error {
	seq := uint8(c.seq.Add(1) - 1)
	b := c.wbuf[:0]
	ulen := 0
	if len(chunk) >= MinCompressLength {
		if need := CompressHeaderSize + compressBound(len(chunk)); cap(b) < need {
			b = make([]byte, 0, need)
		}
		b = b[:CompressHeaderSize]
		var ok bool
		if c.algo == CompressZlib {
			b, ok = deflateZlib(b, chunk)
		} else {
			b = c.zenc.EncodeAll(chunk, b)
			ok = len(b)-CompressHeaderSize < len(chunk)
		}
		if ok {
			ulen = len(chunk)
		}
	}
	if ulen == 0 {
		if need := CompressHeaderSize + len(chunk); cap(b) < need {
			b = make([]byte, 0, need)
		}
		b = append(b[:CompressHeaderSize], chunk...)
	}
	clen := len(b) - CompressHeaderSize
	b[0], b[1], b[2], b[3] = byte(clen), byte(clen>>8), byte(clen>>16), seq
	b[4], b[5], b[6] = byte(ulen), byte(ulen>>8), byte(ulen>>16)
	c.wbuf = b
	_, err := c.nc.Write(b)
	return err
}

func (c *CompressConn) shrinkWrite() {
	if cap(c.wbuf) > compressRetain {
		c.wbuf = nil
	}
}

// compressBound is room enough for n bytes compressed by either algorithm
// (when deflate would need more, it is cut off: the payload goes as is).
func compressBound(n int) int {
	b := n + n>>8 + 64 // zstd's ZSTD_COMPRESSBOUND plus frame header room
	if n < 128<<10 {
		b += (128<<10 - n) >> 11
	}
	return b
}

// zlib: the wire format is RFC 1950, produced with klauspost/compress's
// zlib and read with its flate, framing checked here. klauspost rather than
// the standard library because this runs on every statement: its writer
// resets in O(1) where compress/flate clears 640 KB of hash tables on each
// Reset (about 28 µs for a 60-byte payload, against 4 µs), and its inflater
// does not allocate per block. Checking the Adler-32 trailer here with
// adler32.Checksum keeps Read allocation-free (a zlib reader's Reset
// allocates a new checksum state every time).

type zlibInflater struct {
	fr  io.ReadCloser
	br  bytes.Reader
	one [1]byte
}

type zlibDeflater struct {
	zw *zlib.Writer
	aw limitAppender
}

var (
	zlibInflaters sync.Pool // *zlibInflater
	zlibDeflaters = sync.Pool{New: func() any {
		d := new(zlibDeflater)
		// DefaultCompression is a valid level: no error.
		d.zw, _ = zlib.NewWriterLevel(&d.aw, zlib.DefaultCompression)
		return d
	}}
)

// errNotSmaller stops deflate once its output is no smaller than its input.
var errNotSmaller = errors.New("mysqlwire: compressed payload not smaller")

// limitAppender appends to b and fails once b would exceed limit bytes.
type limitAppender struct {
	b     []byte
	limit int
}

func (a *limitAppender) Write(p []byte) (int, error) {
	if len(a.b)+len(p) > a.limit {
		return 0, errNotSmaller
	}
	a.b = append(a.b, p...)
	return len(p), nil
}

// deflateZlib appends src zlib-compressed to dst and reports whether the
// compressed form is smaller than src.
func deflateZlib(dst, src []byte) ([]byte, bool) {
	d := zlibDeflaters.Get().(*zlibDeflater)
	d.aw.b = dst
	d.aw.limit = len(dst) + len(src) - 1
	d.zw.Reset(&d.aw)
	_, err := d.zw.Write(src)
	if err == nil {
		err = d.zw.Close()
	}
	out := d.aw.b
	d.aw.b = nil
	zlibDeflaters.Put(d)
	return out, err == nil
}

// inflateZlib decompresses the zlib stream src into exactly dst.
func inflateZlib(dst, src []byte) error {
	if len(src) < 2+4 {
		return fmt.Errorf("%w: zlib stream of %d bytes", ErrCompressedPacket, len(src))
	}
	cmf, flg := src[0], src[1]
	if cmf&0x0f != 8 || cmf>>4 > 7 || (uint16(cmf)<<8|uint16(flg))%31 != 0 {
		return fmt.Errorf("%w: bad zlib header %#02x %#02x", ErrCompressedPacket, cmf, flg)
	}
	if flg&0x20 != 0 {
		return fmt.Errorf("%w: zlib preset dictionary", ErrCompressedPacket)
	}
	z, _ := zlibInflaters.Get().(*zlibInflater)
	if z == nil {
		z = new(zlibInflater)
	}
	z.br.Reset(src[2:])
	if z.fr == nil {
		z.fr = flate.NewReader(&z.br)
	} else if err := z.fr.(flate.Resetter).Reset(&z.br, nil); err != nil {
		zlibInflaters.Put(z)
		return fmt.Errorf("%w: %v", ErrCompressedPacket, err)
	}
	err := inflateInto(z, dst)
	if err == nil {
		// The Adler-32 of the decompressed data follows the deflate stream
		// (flate reads a bytes.Reader byte by byte, never past its end).
		rest := src[len(src)-z.br.Len():]
		switch {
		case len(rest) < 4:
			err = fmt.Errorf("%w: zlib checksum missing", ErrCompressedPacket)
		case binary.BigEndian.Uint32(rest) != adler32.Checksum(dst):
			err = fmt.Errorf("%w: zlib checksum mismatch", ErrCompressedPacket)
		}
	}
	z.br.Reset(nil)
	zlibInflaters.Put(z)
	return err
}

func inflateInto(z *zlibInflater, dst []byte) error {
	n, err := io.ReadFull(z.fr, dst)
	if err != nil {
		if n < len(dst) && (err == io.ErrUnexpectedEOF || err == io.EOF) {
			return fmt.Errorf("%w: decompressed to %d bytes or fewer, header says %d", ErrCompressedPacket, n, len(dst))
		}
		return fmt.Errorf("%w: %v", ErrCompressedPacket, err)
	}
	// The stream must end exactly here.
	m, err := z.fr.Read(z.one[:])
	if m > 0 {
		return fmt.Errorf("%w: decompresses to more than the %d bytes in its header", ErrCompressedPacket, len(dst))
	}
	if err != io.EOF {
		return fmt.Errorf("%w: %v", ErrCompressedPacket, err)
	}
	return nil
}

// zstd: one decoder and one encoder per level for the whole process; both
// run up to GOMAXPROCS DecodeAll/EncodeAll calls at once.

var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(1<<24),
		zstd.WithDecoderMaxWindow(1<<24),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(err) // constant options
	}
	return d
})

var (
	zstdEncoders   [zstd.SpeedBestCompression + 1]*zstd.Encoder
	zstdEncodersMu sync.Mutex
)

func zstdEncoder(level int) *zstd.Encoder {
	switch {
	case level == 0:
		level = DefaultZstdLevel
	case level > 22:
		level = 22
	}
	l := zstd.EncoderLevelFromZstd(level)
	zstdEncodersMu.Lock()
	defer zstdEncodersMu.Unlock()
	if e := zstdEncoders[l]; e != nil {
		return e
	}
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(l),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithEncoderCRC(false)) // as MySQL: no content checksum
	if err != nil {
		panic(err) // constant options
	}
	zstdEncoders[l] = e
	return e
}

// inflateZstd decompresses the zstd frames in src into exactly dst.
func inflateZstd(dst, src []byte) error {
	out, err := zstdDecoder().DecodeAll(src, dst[:0:len(dst)])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return fmt.Errorf("%w: decompresses to more than the %d bytes in its header", ErrCompressedPacket, len(dst))
		}
		return fmt.Errorf("%w: %v", ErrCompressedPacket, err)
	}
	if len(out) != len(dst) {
		return fmt.Errorf("%w: decompressed to %d bytes, header says %d", ErrCompressedPacket, len(out), len(dst))
	}
	if &out[0] != &dst[0] {
		copy(dst, out) // not expected: the cap limit keeps DecodeAll in dst
	}
	return nil
}
