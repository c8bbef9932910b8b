//go:build !race

package mysqlwire

import "testing"

// TestCompressNoAllocs: in steady state neither Write nor Read allocates,
// for a small packet and a 64 KiB one, compressed or not.
func TestCompressNoAllocs(t *testing.T) {
	for _, algo := range czAlgos {
		for _, p := range [][]byte{czBenchPayload(60), czBenchPayload(64 << 10), czRandom(64<<10, 1), czText(40, 1)} {
			w := NewCompressConn(&czDiscard{}, algo, 0, CompressServer)
			if a := testing.AllocsPerRun(50, func() {
				if _, err := w.Write(p); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%v: Write of %d bytes: %v allocations", algo, len(p), a)
			}
			nc := &czConn{}
			if _, err := NewCompressConn(nc, algo, 0, CompressServer).Write(p); err != nil {
				t.Fatal(err)
			}
			for _, bufSize := range []int{len(p), 4096} {
				r := NewCompressConn(&czLoop{data: nc.out.Bytes()}, algo, 0, CompressServer)
				buf := make([]byte, bufSize)
				read := func() {
					for left := len(p); left > 0; {
						n, err := r.Read(buf[:min(left, len(buf))])
						if err != nil {
							t.Fatal(err)
						}
						left -= n
					}
				}
				read()
				if a := testing.AllocsPerRun(50, read); a != 0 {
					t.Errorf("%v: Read of %d bytes (buffer %d): %v allocations", algo, len(p), bufSize, a)
				}
			}
		}
	}
}
