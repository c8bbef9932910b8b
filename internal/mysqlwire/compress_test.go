package mysqlwire

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// czConn is a net.Conn reading from r and recording what is written, one
// entry per Write call.
type czConn struct {
	r      io.Reader
	out    bytes.Buffer
	writes int
}

func (c *czConn) Read(p []byte) (int, error) {
	if c.r == nil {
		return 0, io.EOF
	}
	return c.r.Read(p)
}

func (c *czConn) Write(p []byte) (int, error) {
	c.writes++
	return c.out.Write(p)
}

func (c *czConn) Close() error                     { return nil }
func (c *czConn) LocalAddr() net.Addr              { return nil }
func (c *czConn) RemoteAddr() net.Addr             { return nil }
func (c *czConn) SetDeadline(time.Time) error      { return nil }
func (c *czConn) SetReadDeadline(time.Time) error  { return nil }
func (c *czConn) SetWriteDeadline(time.Time) error { return nil }

var czAlgos = []CompressAlgo{CompressZlib, CompressZstd}

// czText is compressible, result-set-like data of n bytes. Above 1 MiB it
// repeats an 8 KiB block, which compresses fast (the race detector makes
// compressing 16 MiB of fresh text take many seconds).
func czText(n int, seed uint64) []byte {
	if n > 1<<20 {
		tile := czText(8<<10, seed)
		b := make([]byte, n)
		for off := 0; off < n; off += copy(b[off:], tile) {
		}
		return b
	}
	words := []string{"alpha", "beta", "gamma", "delta", "2024-05-01", "NULL", "42", "sbtest", "\x00\x01", "x", "customer_", "é"}
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		b = append(b, byte(rng.IntN(256)))
	}
	return b[:n]
}

// czRandom is n incompressible bytes.
func czRandom(n int, seed uint64) []byte {
	rng := rand.NewChaCha8([32]byte{byte(seed)})
	b := make([]byte, n)
	_, _ = rng.Read(b)
	return b
}

type czFrame struct {
	clen, ulen int
	seq        byte
	payload    []byte
}

// czParse splits a compressed stream into frames.
func czParse(t *testing.T, s []byte) []czFrame {
	t.Helper()
	var fs []czFrame
	for len(s) > 0 {
		if len(s) < CompressHeaderSize {
			t.Fatalf("trailing %d bytes", len(s))
		}
		f := czFrame{
			clen: int(s[0]) | int(s[1])<<8 | int(s[2])<<16,
			seq:  s[3],
			ulen: int(s[4]) | int(s[5])<<8 | int(s[6])<<16,
		}
		if len(s) < CompressHeaderSize+f.clen {
			t.Fatalf("frame of %d bytes, %d left", f.clen, len(s)-CompressHeaderSize)
		}
		f.payload = s[CompressHeaderSize : CompressHeaderSize+f.clen]
		fs = append(fs, f)
		s = s[CompressHeaderSize+f.clen:]
	}
	return fs
}

// czFrameBytes builds one compressed packet by hand.
func czFrameBytes(seq byte, ulen int, payload []byte) []byte {
	n := len(payload)
	b := []byte{byte(n), byte(n >> 8), byte(n >> 16), seq, byte(ulen), byte(ulen >> 8), byte(ulen >> 16)}
	return append(b, payload...)
}

func czZlib(t testing.TB, p []byte) []byte {
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	if _, err := zw.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// czZstdStream compresses p as a zstd stream flushed before the end, so
// the frame does not state its content size.
func czZstdStream(p []byte) []byte {
	var b bytes.Buffer
	e, _ := zstd.NewWriter(&b, zstd.WithEncoderConcurrency(1))
	_, _ = e.Write(p[:len(p)/2])
	_ = e.Flush()
	_, _ = e.Write(p[len(p)/2:])
	_ = e.Close()
	return b.Bytes()
}

func czZstd(p []byte) []byte {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	defer e.Close()
	return e.EncodeAll(p, nil)
}

// czReadAll reads n bytes from r in reads of varying sizes.
func czReadAll(r io.Reader, n int, sizes []int) ([]byte, error) {
	got := make([]byte, n)
	off := 0
	for i := 0; off < n; i++ {
		end := min(n, off+sizes[i%len(sizes)])
		m, err := r.Read(got[off:end])
		if m < 0 || m > end-off {
			return nil, fmt.Errorf("read returned %d for %d bytes", m, end-off)
		}
		off += m
		if err != nil {
			return got[:off], err
		}
	}
	return got, nil
}

func czPipe(algo CompressAlgo) (srv, cli *CompressConn) {
	a, b := net.Pipe()
	return NewCompressConn(a, algo, 0, CompressServer), NewCompressConn(b, algo, 0, CompressClient)
}

// TestCompressRoundTrip sends payloads of many sizes from client to server
// and back over net.Pipe, reading with buffers of several sizes.
func TestCompressRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 49, 50, 51, 1000, 64 << 10, 1<<24 - 1, 1 << 24, 40 << 20}
	if testing.Short() {
		sizes = sizes[:7]
	} else if raceEnabled {
		sizes = sizes[:9]
	}
	readSizes := [][]int{{1 << 30}, {1, 7, 4096, 1 << 20, 3}}
	for _, algo := range czAlgos {
		for i, n := range sizes {
			t.Run(fmt.Sprintf("%v/%d", algo, n), func(t *testing.T) {
				srv, cli := czPipe(algo)
				defer srv.Close()
				defer cli.Close()
				data := czText(n, uint64(n))
				if i%2 == 1 {
					data = czRandom(n, uint64(n))
				}
				for dir, pair := range [][2]*CompressConn{{cli, srv}, {srv, cli}} {
					w, r := pair[0], pair[1]
					if w == cli {
						cli.ResetSeq()
					}
					errc := make(chan error, 1)
					go func() {
						m, err := w.Write(data)
						if err == nil && m != n {
							err = fmt.Errorf("wrote %d of %d", m, n)
						}
						errc <- err
					}()
					got, err := czReadAll(r, n, readSizes[dir])
					if err != nil {
						t.Fatalf("direction %d: read: %v", dir, err)
					}
					if err := <-errc; err != nil {
						t.Fatalf("direction %d: write: %v", dir, err)
					}
					if !bytes.Equal(got, data) {
						t.Fatalf("direction %d: payload differs", dir)
					}
					if r.Buffered() != 0 {
						t.Fatalf("direction %d: %d bytes left buffered", dir, r.Buffered())
					}
				}
			})
		}
	}
}

// TestCompressFraming checks the compressed packets Write produces: at most
// 16 MiB - 1 bytes each, short payloads and incompressible ones sent as is,
// one underlying write per compressed packet, consecutive sequence ids.
func TestCompressFraming(t *testing.T) {
	sizes := []int{1, 49, 50, 51, 128, 64 << 10, 1<<24 - 1, 1 << 24, 40 << 20}
	for _, algo := range czAlgos {
		for _, random := range []bool{false, true} {
			for _, n := range sizes {
				if testing.Short() && n > 1<<20 || raceEnabled && (n > 1<<24 || random && n > 1<<20) {
					continue
				}
				data := czText(n, 1)
				if random {
					data = czRandom(n, 1)
				}
				nc := &czConn{}
				c := NewCompressConn(nc, algo, 0, CompressClient)
				if m, err := c.Write(data); err != nil || m != n {
					t.Fatalf("%v %d: Write = %d, %v", algo, n, m, err)
				}
				fs := czParse(t, nc.out.Bytes())
				want := (n + maxCompressPayload - 1) / maxCompressPayload
				if len(fs) != want || nc.writes != want {
					t.Fatalf("%v %d: %d frames in %d writes, want %d", algo, n, len(fs), nc.writes, want)
				}
				var back []byte
				for i, f := range fs {
					chunk := data[i*maxCompressPayload : min(n, (i+1)*maxCompressPayload)]
					if f.seq != byte(i) {
						t.Fatalf("%v %d: frame %d has seq %d", algo, n, i, f.seq)
					}
					if f.ulen == 0 {
						if len(chunk) >= MinCompressLength && !random && len(chunk) > 1000 {
							t.Fatalf("%v %d: compressible frame %d sent raw", algo, n, i)
						}
						back = append(back, f.payload...)
						continue
					}
					if len(chunk) < MinCompressLength {
						t.Fatalf("%v %d: frame of %d bytes compressed", algo, n, len(chunk))
					}
					if f.ulen != len(chunk) || f.clen >= f.ulen {
						t.Fatalf("%v %d: frame %d clen %d ulen %d for %d bytes", algo, n, i, f.clen, f.ulen, len(chunk))
					}
					dec := make([]byte, f.ulen)
					var err error
					if algo == CompressZlib {
						err = inflateZlib(dec, f.payload)
					} else {
						err = inflateZstd(dec, f.payload)
					}
					if err != nil {
						t.Fatalf("%v %d: frame %d: %v", algo, n, i, err)
					}
					back = append(back, dec...)
				}
				if !bytes.Equal(back, data) {
					t.Fatalf("%v %d: frames do not add up to the payload", algo, n)
				}
				if c.Seq() != byte(want) {
					t.Fatalf("%v %d: next seq %d, want %d", algo, n, c.Seq(), want)
				}
			}
		}
	}
}

// TestCompressPacketStream runs the mysqlwire Reader and Writer over
// CompressConn as the proxy does: many small packets, several per
// compressed packet, some bigger than 16 MiB, flushed at odd points.
func TestCompressPacketStream(t *testing.T) {
	for _, algo := range czAlgos {
		t.Run(algo.String(), func(t *testing.T) {
			srv, cli := czPipe(algo)
			defer srv.Close()
			defer cli.Close()
			var payloads [][]byte
			for i := range 300 {
				n := i % 97
				if i%50 == 7 {
					n = 5000 + i
				}
				payloads = append(payloads, czText(n, uint64(i)))
			}
			if !testing.Short() {
				payloads = append(payloads, czText(1<<24+100, 9), czText(10, 10))
			}
			errc := make(chan error, 1)
			go func() {
				w := NewWriterSize(srv, 16<<10)
				for i, p := range payloads {
					if err := w.WritePacket(p); err != nil {
						errc <- err
						return
					}
					if i%13 == 0 {
						if err := w.Flush(); err != nil {
							errc <- err
							return
						}
					}
				}
				errc <- w.Flush()
			}()
			r := NewReader(cli, make([]byte, 4096), nil)
			for i, want := range payloads {
				got, err := r.ReadPacket()
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("packet %d differs (%d bytes, want %d)", i, len(got), len(want))
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCompressSmallWrites checks that every Write, however small, is one
// compressed packet in one underlying write, and that a reader sees the
// bytes in order.
func TestCompressSmallWrites(t *testing.T) {
	for _, algo := range czAlgos {
		nc := &czConn{}
		c := NewCompressConn(nc, algo, 0, CompressServer)
		var all []byte
		for i := range 100 {
			p := czText(i*3, uint64(i))
			if _, err := c.Write(p); err != nil {
				t.Fatal(err)
			}
			all = append(all, p...)
		}
		// Write(nil) is the one write with no packet.
		if nc.writes != 99 {
			t.Fatalf("%v: %d writes for 99 non-empty Writes", algo, nc.writes)
		}
		r := NewCompressConn(&czConn{r: bytes.NewReader(nc.out.Bytes())}, algo, 0, CompressClient)
		got, err := czReadAll(r, len(all), []int{5, 100, 1})
		if err != nil || !bytes.Equal(got, all) {
			t.Fatalf("%v: read back: %v", algo, err)
		}
		if _, err := r.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("%v: at the end: %v, want EOF", algo, err)
		}
	}
}

// TestCompressSeqServer: the server follows whatever sequence the client
// sends and answers with the next one.
func TestCompressSeqServer(t *testing.T) {
	ping := packet(0, []byte{0x0e})
	var in []byte
	in = append(in, czFrameBytes(0, 0, ping)...) // first command
	in = append(in, czFrameBytes(5, 0, ping)...) // out of order: followed
	in = append(in, czFrameBytes(0, 0, ping)...) // next command
	in = append(in, czFrameBytes(255, 0, ping)...)
	nc := &czConn{r: bytes.NewReader(in)}
	c := NewCompressConn(nc, CompressZlib, 0, CompressServer)
	ok := packet(1, []byte{0, 0, 0, 2, 0, 0, 0})
	buf := make([]byte, len(ping))
	var wantSeqs []byte
	for _, next := range []byte{1, 6, 1, 0} {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if c.Seq() != next {
			t.Fatalf("after a read: next seq %d, want %d", c.Seq(), next)
		}
		for k := range 2 { // a reply in two compressed packets
			if _, err := c.Write(ok); err != nil {
				t.Fatal(err)
			}
			wantSeqs = append(wantSeqs, next+byte(k))
		}
	}
	for i, f := range czParse(t, nc.out.Bytes()) {
		if f.seq != wantSeqs[i] {
			t.Fatalf("reply frame %d: seq %d, want %d", i, f.seq, wantSeqs[i])
		}
	}
}

// TestCompressSeqClient: ResetSeq before a command, the reply must carry the
// next sequence id, and anything else is ErrSequence (as libmysql).
func TestCompressSeqClient(t *testing.T) {
	ok := packet(1, []byte{0, 0, 0, 2, 0, 0, 0})
	var in []byte
	in = append(in, czFrameBytes(1, 0, ok)...) // reply to a 1-frame command
	in = append(in, czFrameBytes(2, 0, ok)...) // continuation
	in = append(in, czFrameBytes(1, 0, ok)...) // reply to the next command
	in = append(in, czFrameBytes(3, 0, ok)...) // wrong: 2 expected
	nc := &czConn{r: bytes.NewReader(in)}
	c := NewCompressConn(nc, CompressZstd, 0, CompressClient)
	buf := make([]byte, len(ok))
	c.ResetSeq()
	if _, err := c.Write(packet(0, []byte{0x0e})); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	if c.Seq() != 3 {
		t.Fatalf("seq %d after reading 1 and 2", c.Seq())
	}
	c.ResetSeq()
	if _, err := c.Write(packet(0, []byte{0x0e})); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	_, err := c.Read(buf)
	if !errors.Is(err, ErrSequence) {
		t.Fatalf("out of order reply: %v, want ErrSequence", err)
	}
	if _, err2 := c.Read(buf); err2 != err {
		t.Fatalf("error does not stick: %v", err2)
	}
	fs := czParse(t, nc.out.Bytes())
	if len(fs) != 2 || fs[0].seq != 0 || fs[1].seq != 0 {
		t.Fatalf("commands sent with %+v", fs)
	}
}

// TestCompressUncompressible: a payload that does not shrink goes as is.
func TestCompressUncompressible(t *testing.T) {
	for _, algo := range czAlgos {
		data := czRandom(64<<10, 3)
		nc := &czConn{}
		c := NewCompressConn(nc, algo, 0, CompressServer)
		if _, err := c.Write(data); err != nil {
			t.Fatal(err)
		}
		fs := czParse(t, nc.out.Bytes())
		if len(fs) != 1 || fs[0].ulen != 0 || fs[0].clen != len(data) || !bytes.Equal(fs[0].payload, data) {
			t.Fatalf("%v: frames %d, first clen %d ulen %d", algo, len(fs), fs[0].clen, fs[0].ulen)
		}
		// The compressor is still fine for the next payload.
		nc.out.Reset()
		text := czText(64<<10, 3)
		if _, err := c.Write(text); err != nil {
			t.Fatal(err)
		}
		r := NewCompressConn(&czConn{r: &nc.out}, algo, 0, CompressServer)
		got, err := czReadAll(r, len(text), []int{1000})
		if err != nil || !bytes.Equal(got, text) {
			t.Fatalf("%v: after an incompressible payload: %v", algo, err)
		}
	}
}

// Frames produced by real zlib 1.2.13 (compress2, level 6) and libzstd 1.5.4
// (level 3, no checksum) for a 128-byte COM_QUERY packet, framed as libmysql
// does: what a MySQL client sends.
const (
	czLibZlibFrame = "78000000800000789c3d8d3b0ac240140017bcc83412855718ff96c63c71311fd804c472c12d022685c1cec3bb5858cf30f331c64c1a2df4d4d23d84c1f74108bdef9e9c5d5df21ec36be47651a751c056cc526129ac84b5b011b6c24ed80b07215dcc3956f92f4361af4ae2a709b5cbd591ddff8bc84adb46fd0b21101fec"
	czLibZstdFrame = "7a00000080000028b52ffd20808d030072071a1f506f33064821d43fbd3fa5a241b6f5ff87eaf634e8880b3a3a28cc4c5340020e7b6a5073531abf7d9e741380cd1b69ee3861f513311e386c5dac8a35b122d6c36a580b2b616582a33625dfb790c9174bbc6086a4f7b822e18c6b9cb05a29f9e458b712c05a2b130100ae598428"
	czLibQuery     = "SELECT id, name, email FROM users WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) AND name LIKE 'a%' ORDER BY id, name LIMIT 10"
)

// TestCompressLibmysqlFrames checks frames byte for byte against what
// libmysql writes, and reads frames made by the C libraries.
func TestCompressLibmysqlFrames(t *testing.T) {
	query := packet(0, append([]byte{ComQuery}, czLibQuery...))
	for _, algo := range czAlgos {
		// COM_PING: 5 bytes, under MIN_COMPRESS_LENGTH: sent as is.
		nc := &czConn{}
		c := NewCompressConn(nc, algo, 0, CompressClient)
		if _, err := c.Write([]byte{0x01, 0, 0, 0, 0x0e}); err != nil {
			t.Fatal(err)
		}
		want := []byte{0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0e}
		if !bytes.Equal(nc.out.Bytes(), want) {
			t.Fatalf("%v: COM_PING frame % x, want % x", algo, nc.out.Bytes(), want)
		}
		// 49 bytes: still raw, second frame of the command: seq 1.
		nc.out.Reset()
		p49 := bytes.Repeat([]byte{'a'}, 49)
		if _, err := c.Write(p49); err != nil {
			t.Fatal(err)
		}
		if got := nc.out.Bytes(); !bytes.Equal(got[:7], []byte{49, 0, 0, 1, 0, 0, 0}) || !bytes.Equal(got[7:], p49) {
			t.Fatalf("%v: 49-byte frame header % x", algo, got[:7])
		}
		// 200 repetitive bytes: compressed. (At 50 to 127 bytes klauspost's
		// deflate codes literals only, which 50 times 'a' does not pay for:
		// such a payload goes as is, as any that does not shrink.)
		nc.out.Reset()
		rep := bytes.Repeat([]byte("abcd"), 50)
		if _, err := c.Write(rep); err != nil {
			t.Fatal(err)
		}
		got := nc.out.Bytes()
		if clen := int(got[0]) | int(got[1])<<8 | int(got[2])<<16; clen != len(got)-7 || clen >= 200 || got[3] != 2 || !bytes.Equal(got[4:7], []byte{200, 0, 0}) {
			t.Fatalf("%v: 200-byte frame header % x", algo, got[:7])
		}
		switch algo {
		case CompressZlib:
			// zlib default level: header 78 9c, as compress() in libmysql.
			if got[7] != 0x78 || got[8] != 0x9c {
				t.Fatalf("zlib header % x", got[7:9])
			}
			zr, err := zlib.NewReader(bytes.NewReader(got[7:]))
			if err != nil {
				t.Fatal(err)
			}
			dec, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(dec, rep) {
				t.Fatalf("compress/zlib reads %q, %v", dec, err)
			}
		case CompressZstd:
			if !bytes.Equal(got[7:11], []byte{0x28, 0xb5, 0x2f, 0xfd}) {
				t.Fatalf("zstd magic % x", got[7:11])
			}
		}
		// The query through our writer, read back by our reader.
		nc.out.Reset()
		c.ResetSeq()
		if _, err := c.Write(query); err != nil {
			t.Fatal(err)
		}
		fs := czParse(t, nc.out.Bytes())
		// Go's zlib shrinks it as the C one does; klauspost's zstd does
		// not (libzstd gets 122 bytes), so it goes as is.
		if len(fs) != 1 || fs[0].seq != 0 || fs[0].ulen != 128 && !(algo == CompressZstd && fs[0].ulen == 0 && bytes.Equal(fs[0].payload, query)) {
			t.Fatalf("%v: query frames %+v", algo, fs)
		}
	}
	for name, frame := range map[CompressAlgo]string{CompressZlib: czLibZlibFrame, CompressZstd: czLibZstdFrame} {
		b, _ := hex.DecodeString(frame)
		c := NewCompressConn(&czConn{r: bytes.NewReader(b)}, name, 0, CompressServer)
		got, err := czReadAll(c, len(query), []int{50})
		if err != nil || !bytes.Equal(got, query) {
			t.Fatalf("%v: frame from the C library reads %q, %v", name, got, err)
		}
		if c.Seq() != 1 {
			t.Fatalf("%v: seq %d after a seq-0 command", name, c.Seq())
		}
	}
}

// TestCompressMalformed feeds broken streams: each must fail with an error,
// never a panic, and protocol errors must stick.
func TestCompressMalformed(t *testing.T) {
	text := czText(1000, 5)
	zl := czZlib(t, text)
	zs := czZstd(text)
	badSum := append([]byte(nil), zl...)
	badSum[len(badSum)-1] ^= 1
	badHeader := append([]byte(nil), zl...)
	badHeader[1] ^= 1
	cases := []struct {
		name   string
		algo   CompressAlgo
		stream []byte
		want   error
	}{
		{"truncated header", CompressZlib, []byte{5, 0, 0}, io.ErrUnexpectedEOF},
		{"length lies", CompressZlib, czFrameBytes(0, 0, []byte("hello"))[:9], io.ErrUnexpectedEOF},
		{"length lies compressed", CompressZstd, czFrameBytes(0, 1000, zs)[:20], io.ErrUnexpectedEOF},
		{"zlib too short", CompressZlib, czFrameBytes(0, 1000, zl[:len(zl)/2]), ErrCompressedPacket},
		{"zlib fewer bytes", CompressZlib, czFrameBytes(0, 1001, zl), ErrCompressedPacket},
		{"zlib more bytes", CompressZlib, czFrameBytes(0, 999, zl), ErrCompressedPacket},
		{"zlib checksum", CompressZlib, czFrameBytes(0, 1000, badSum), ErrCompressedPacket},
		{"zlib header", CompressZlib, czFrameBytes(0, 1000, badHeader), ErrCompressedPacket},
		{"zlib no checksum", CompressZlib, czFrameBytes(0, 1000, zl[:len(zl)-4]), ErrCompressedPacket},
		{"zlib garbage", CompressZlib, czFrameBytes(0, 1000, czRandom(200, 1)), ErrCompressedPacket},
		{"zlib empty", CompressZlib, czFrameBytes(0, 1000, nil), ErrCompressedPacket},
		{"zstd fewer bytes", CompressZstd, czFrameBytes(0, 1001, zs), ErrCompressedPacket},
		{"zstd stream fewer bytes", CompressZstd, czFrameBytes(0, 1001, czZstdStream(text)), ErrCompressedPacket},
		{"zstd stream more bytes", CompressZstd, czFrameBytes(0, 999, czZstdStream(text)), ErrCompressedPacket},
		{"zstd more bytes", CompressZstd, czFrameBytes(0, 999, zs), ErrCompressedPacket},
		{"zstd garbage", CompressZstd, czFrameBytes(0, 1000, czRandom(200, 1)), ErrCompressedPacket},
		{"zstd empty", CompressZstd, czFrameBytes(0, 1000, nil), ErrCompressedPacket},
		{"zstd given zlib", CompressZstd, czFrameBytes(0, 1000, zl), ErrCompressedPacket},
	}
	for _, tc := range cases {
		for _, bufSize := range []int{10, 4096} {
			// A good frame first: its bytes come out before the error.
			stream := append(czFrameBytes(0, 0, []byte("ok")), tc.stream...)
			c := NewCompressConn(&czConn{r: bytes.NewReader(stream)}, tc.algo, 0, CompressServer)
			buf := make([]byte, bufSize)
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "ok" {
				t.Fatalf("%s: first frame: %q, %v", tc.name, buf[:n], err)
			}
			n, err = c.Read(buf)
			if !errors.Is(err, tc.want) || n != 0 {
				t.Fatalf("%s (buf %d): Read = %d, %v, want %v", tc.name, bufSize, n, err, tc.want)
			}
			if errors.Is(tc.want, ErrCompressedPacket) {
				if _, err2 := c.Read(buf); err2 != err {
					t.Fatalf("%s: error does not stick: %v", tc.name, err2)
				}
			}
		}
	}
}

// TestCompressBombs: payloads that inflate far beyond what their header
// says fail after at most 16 MiB of output, with bounded memory.
func TestCompressBombs(t *testing.T) {
	zeros := make([]byte, 20<<20)
	bombs := []struct {
		algo CompressAlgo
		bomb []byte
	}{{CompressZlib, czZlib(t, zeros)}, {CompressZstd, czZstd(zeros)}, {CompressZstd, czZstdStream(zeros)}}
	zeros = nil
	for _, b := range bombs {
		algo, bomb := b.algo, b.bomb
		for _, ulen := range []int{1 << 20, maxCompressPayload} {
			stream := czFrameBytes(0, ulen, bomb)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c := NewCompressConn(&czConn{r: bytes.NewReader(stream)}, algo, 0, CompressServer)
			_, err := c.Read(make([]byte, 4096))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCompressedPacket) {
				t.Fatalf("%v ulen %d: %v", algo, ulen, err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(2*len(stream)+ulen+8<<20) {
				t.Fatalf("%v ulen %d: allocated %d MiB for a %d KiB frame", algo, ulen, alloc>>20, len(stream)>>10)
			}
		}
	}
}

// TestCompressGrowsWithInput: a header announcing 16 MiB followed by a
// trickle does not get a 16 MiB buffer at once.
func TestCompressGrowsWithInput(t *testing.T) {
	hdr := []byte{0xff, 0xff, 0xff, 0, 0, 0, 0}
	stream := append(hdr, make([]byte, 100)...)
	c := NewCompressConn(&czConn{r: bytes.NewReader(stream)}, CompressZlib, 0, CompressServer)
	if _, err := c.Read(make([]byte, 10)); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated frame: %v", err)
	}
	if cap(c.rbuf) > compressInitialRead {
		t.Fatalf("read buffer %d bytes for 107 received", cap(c.rbuf))
	}
}

// TestCompressBuffered: bytes read before the switch are read first.
func TestCompressBuffered(t *testing.T) {
	for _, algo := range czAlgos {
		nc := &czConn{}
		w := NewCompressConn(nc, algo, 0, CompressClient)
		data := czText(5000, 8)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("tail")); err != nil {
			t.Fatal(err)
		}
		stream := nc.out.Bytes()
		for _, cut := range []int{0, 3, 7, 100, len(stream) - 5, len(stream)} {
			pre := append([]byte(nil), stream[:cut]...)
			c := NewCompressConnBuffered(&czConn{r: bytes.NewReader(stream[cut:])}, algo, 0, CompressServer, pre)
			clear(pre) // copied
			got, err := czReadAll(c, len(data)+4, []int{333})
			if err != nil || !bytes.Equal(got, append(data, "tail"...)) {
				t.Fatalf("%v cut %d: %v", algo, cut, err)
			}
		}
	}
}

// TestCompressReadDeadline: a read that times out in the middle of a
// compressed packet loses nothing; the next read carries on.
func TestCompressReadDeadline(t *testing.T) {
	for _, algo := range czAlgos {
		a, b := net.Pipe()
		nc := &czConn{}
		w := NewCompressConn(nc, algo, 0, CompressClient)
		data := czText(3000, 4)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		stream := nc.out.Bytes()
		c := NewCompressConn(a, algo, 0, CompressServer)
		go func() {
			_, _ = b.Write(stream[:20])
			time.Sleep(100 * time.Millisecond)
			_, _ = b.Write(stream[20:])
		}()
		if err := c.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(data))
		_, err := c.Read(buf)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%v: %v, want a timeout", algo, err)
		}
		_ = c.SetReadDeadline(time.Time{})
		got, err := czReadAll(c, len(data), []int{len(data)})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%v: after the timeout: %v", algo, err)
		}
		a.Close()
		b.Close()
	}
}

// TestCompressConcurrent reads and writes both ends at once (run with
// -race): the shared sequence counter must be safe.
func TestCompressConcurrent(t *testing.T) {
	for _, algo := range czAlgos {
		// Both ends in server mode: a client checks sequences, which an
		// exchange in both directions at once does not keep.
		a, b := net.Pipe()
		srv := NewCompressConn(a, algo, 0, CompressServer)
		cli := NewCompressConn(b, algo, 0, CompressServer)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		const rounds = 200
		for _, c := range []*CompressConn{srv, cli} {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range rounds {
					if _, err := c.Write(czText(i*10, uint64(i))); err != nil {
						errs <- err
						return
					}
					if i%17 == 0 && c == cli {
						c.ResetSeq()
					}
				}
			}()
			go func() {
				defer wg.Done()
				for i := range rounds {
					want := czText(i*10, uint64(i))
					got, err := czReadAll(c, len(want), []int{64})
					if err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, want) {
						errs <- fmt.Errorf("round %d differs", i)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%v: %v", algo, err)
		}
		srv.Close()
		cli.Close()
	}
}

// TestCompressShrinks: after a large packet the large buffers are dropped.
func TestCompressShrinks(t *testing.T) {
	for _, algo := range czAlgos {
		srv, cli := czPipe(algo)
		data := czText(4<<20, 2)
		done := make(chan error, 1)
		go func() { _, err := cli.Write(data); done <- err }()
		got, err := czReadAll(srv, len(data), []int{1 << 20})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if cap(srv.rbuf) > compressRetain || cap(srv.dbuf) > compressRetain || cap(cli.wbuf) > compressRetain {
			t.Fatalf("%v: buffers kept: read %d, decompress %d, write %d", algo, cap(srv.rbuf), cap(srv.dbuf), cap(cli.wbuf))
		}
		srv.Close()
		cli.Close()
	}
}

func TestNegotiatedCompression(t *testing.T) {
	for caps, want := range map[uint32]CompressAlgo{
		0:                              CompressNone,
		ClientCompress:                 CompressZlib,
		ClientZstdCompressionAlgorithm: CompressZstd,
		ClientCompress | ClientZstdCompressionAlgorithm: CompressZlib,
	} {
		if got := NegotiatedCompression(caps); got != want {
			t.Errorf("caps %#x: %v, want %v", caps, got, want)
		}
	}
}

// czRefDecode decodes a zlib compressed stream with compress/zlib, frame
// by frame, stopping at the first bad or truncated frame.
func czRefDecode(stream []byte) (out []byte, ok bool) {
	for len(stream) > 0 {
		if len(stream) < CompressHeaderSize {
			return out, false
		}
		clen := int(stream[0]) | int(stream[1])<<8 | int(stream[2])<<16
		ulen := int(stream[4]) | int(stream[5])<<8 | int(stream[6])<<16
		if len(stream) < CompressHeaderSize+clen {
			return out, false
		}
		payload := stream[CompressHeaderSize : CompressHeaderSize+clen]
		stream = stream[CompressHeaderSize+clen:]
		if ulen == 0 {
			out = append(out, payload...)
			continue
		}
		zr, err := zlib.NewReader(bytes.NewReader(payload))
		if err != nil {
			return out, false
		}
		dec, err := io.ReadAll(io.LimitReader(zr, int64(ulen)+1))
		if err != nil || len(dec) != ulen {
			return out, false
		}
		out = append(out, dec...)
	}
	return out, true
}

// FuzzCompressRead reads arbitrary compressed streams: no panic, buffers
// bounded by the protocol (16 MiB per packet) and by what arrived, and for
// zlib the same bytes and verdict as compress/zlib.
func FuzzCompressRead(f *testing.F) {
	for _, algo := range czAlgos {
		for _, n := range []int{0, 10, 49, 50, 51, 200, 3000} {
			nc := &czConn{}
			c := NewCompressConn(nc, algo, 0, CompressClient)
			_, _ = c.Write(czText(n, uint64(n)))
			_, _ = c.Write(packet(3, []byte("select 1")))
			_, _ = c.Write(czRandom(n, 1))
			f.Add(nc.out.Bytes(), algo == CompressZstd, uint16(n), false)
		}
	}
	zl, _ := hex.DecodeString(czLibZlibFrame)
	zs, _ := hex.DecodeString(czLibZstdFrame)
	f.Add(zl, false, uint16(4096), false)
	f.Add(zs, true, uint16(17), true)
	f.Add(czFrameBytes(0, 0, nil), false, uint16(1), false)
	f.Add([]byte{0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff}, true, uint16(100), false)
	f.Fuzz(func(t *testing.T, stream []byte, useZstd bool, chunk uint16, client bool) {
		algo, mode := CompressZlib, CompressServer
		if useZstd {
			algo = CompressZstd
		}
		if client {
			mode = CompressClient
		}
		c := NewCompressConn(&czConn{r: bytes.NewReader(stream)}, algo, 0, mode)
		buf := make([]byte, int(chunk)%70000+1)
		var out []byte
		var err error
		for {
			var n int
			n, err = c.Read(buf)
			if n < 0 || n > len(buf) {
				t.Fatalf("Read returned %d for a %d-byte buffer", n, len(buf))
			}
			out = append(out, buf[:n]...)
			if cap(c.rbuf) > max(2*len(stream), compressInitialRead) {
				t.Fatalf("read buffer of %d bytes for a %d-byte stream", cap(c.rbuf), len(stream))
			}
			if cap(c.dbuf) > maxCompressPayload {
				t.Fatalf("decompression buffer of %d bytes", cap(c.dbuf))
			}
			if err != nil {
				break
			}
			if n == 0 {
				t.Fatal("Read returned 0, nil")
			}
		}
		if !useZstd && !client {
			ref, ok := czRefDecode(stream)
			if !bytes.Equal(out, ref) {
				t.Fatalf("read %d bytes, compress/zlib %d", len(out), len(ref))
			}
			if ok != (err == io.EOF) {
				t.Fatalf("compress/zlib ok=%v, Read ended with %v", ok, err)
			}
		}
	})
}

// Benchmarks: a 60-byte packet (a point query, under the 64-byte mark where
// compression rarely pays) and a 64 KiB result-set-like chunk.

func czBenchPayload(n int) []byte {
	if n == 60 {
		q := "SELECT pad FROM sbtest1 WHERE id=5012 AND k < 9 LIMIT 1"
		return packet(0, append([]byte{ComQuery}, q...))
	}
	return czRows(n)
}

// czRows is n bytes of a sysbench-like result set: row packets of id, k,
// c (119 digits and dashes) and pad (59).
func czRows(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for seq := byte(1); len(b) < n; seq++ {
		var row []byte
		for _, v := range []int{rng.IntN(1000000), rng.IntN(1000000)} {
			s := fmt.Appendf(nil, "%d", v)
			row = append(append(row, byte(len(s))), s...)
		}
		for _, groups := range []int{10, 5} {
			var s []byte
			for i := range groups {
				if i > 0 {
					s = append(s, '-')
				}
				s = fmt.Appendf(s, "%011d", rng.Int64N(99999999999))
			}
			row = append(append(row, byte(len(s))), s...)
		}
		b = append(b, packet(seq, row)...)
	}
	return b[:n]
}

type czDiscard struct{ czConn }

func (*czDiscard) Write(p []byte) (int, error) { return len(p), nil }

type czLoop struct {
	czConn
	data []byte
	off  int
}

func (l *czLoop) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func BenchmarkCompressWrite(b *testing.B) {
	for _, algo := range czAlgos {
		for _, n := range []int{60, 64 << 10} {
			b.Run(fmt.Sprintf("%v/%d", algo, n), func(b *testing.B) {
				p := czBenchPayload(n)
				c := NewCompressConn(&czDiscard{}, algo, 0, CompressServer)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Write(p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkCompressRead(b *testing.B) {
	for _, algo := range czAlgos {
		for _, n := range []int{60, 64 << 10} {
			b.Run(fmt.Sprintf("%v/%d", algo, n), func(b *testing.B) {
				p := czBenchPayload(n)
				nc := &czConn{}
				if _, err := NewCompressConn(nc, algo, 0, CompressServer).Write(p); err != nil {
					b.Fatal(err)
				}
				c := NewCompressConn(&czLoop{data: nc.out.Bytes()}, algo, 0, CompressServer)
				buf := make([]byte, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := io.ReadFull(c, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCompressReadSmallBuffer reads 64 KiB packets through a 16 KiB
// buffer, as a mysqlwire.Reader with a small resident buffer does.
func BenchmarkCompressReadSmallBuffer(b *testing.B) {
	for _, algo := range czAlgos {
		b.Run(algo.String(), func(b *testing.B) {
			p := czBenchPayload(64 << 10)
			nc := &czConn{}
			if _, err := NewCompressConn(nc, algo, 0, CompressServer).Write(p); err != nil {
				b.Fatal(err)
			}
			c := NewCompressConn(&czLoop{data: nc.out.Bytes()}, algo, 0, CompressServer)
			buf := make([]byte, 16<<10)
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				for left := len(p); left > 0; {
					n, err := c.Read(buf[:min(left, len(buf))])
					if err != nil {
						b.Fatal(err)
					}
					left -= n
				}
			}
		})
	}
}
