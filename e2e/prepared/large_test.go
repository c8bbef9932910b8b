package prepared

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLargeArgument covers an application storing a 17 MiB file as a
// prepared-statement argument. With go-sql-driver's maxAllowedPacket at
// 64 MiB the value travels inside COM_STMT_EXECUTE, a logical packet of more
// than 16 MiB split into two physical packets; at 4 MiB go-sql-driver
// streams it with COM_STMT_SEND_LONG_DATA in chunks before the execute. The
// server must store exactly those bytes (its SHA2 matches) and the
// binary-protocol row read back (itself more than 16 MiB) must equal them.
func TestLargeArgument(t *testing.T) {
	ctx := testCtx(t, 2*time.Minute)
	root := env.Root(t)
	freshTable(t, root, "ps_big", "(id INT PRIMARY KEY, b LONGBLOB)")
	blob := make([]byte, 17<<20)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(blob)
	wantSum := hex.EncodeToString(sum[:])
	px := env.StartProxy(t)

	id := 0
	for _, mode := range []struct{ name, maxPacket string }{
		{"split execute packet", "maxAllowedPacket=67108864"},
		{"send long data", "maxAllowedPacket=4194304"},
	} {
		for _, tg := range []struct{ name, dsn string }{
			{"direct", directPSDSN(t, mode.maxPacket)},
			{"proxy", psDSN(px, mode.maxPacket)},
		} {
			id++
			t.Run(mode.name+"/"+tg.name, func(t *testing.T) {
				db := openDB(t, tg.dsn)
				if _, err := db.ExecContext(ctx, "INSERT INTO ps_big (id, b) VALUES (?, ?)", id, blob); err != nil {
					t.Fatalf("insert %d bytes: %v", len(blob), err)
				}
				var n int
				var serverSum string
				if err := root.QueryRowContext(ctx, "SELECT LENGTH(b), SHA2(b, 256) FROM tpproxy_test.ps_big WHERE id = "+strconv.Itoa(id)).Scan(&n, &serverSum); err != nil {
					t.Fatal(err)
				}
				if n != len(blob) || serverSum != wantSum {
					t.Fatalf("the server stored %d bytes with SHA-256 %s; sent %d bytes with %s", n, serverSum, len(blob), wantSum)
				}
				var back []byte
				var backSum string
				if err := db.QueryRowContext(ctx, "SELECT b, SHA2(b, 256) FROM ps_big WHERE id = ?", id).Scan(&back, &backSum); err != nil {
					t.Fatalf("read back: %v", err)
				}
				if !bytes.Equal(back, blob) || backSum != wantSum {
					got := sha256.Sum256(back)
					t.Fatalf("read back %d bytes with SHA-256 %x (server says %s); wrote %d bytes with %s",
						len(back), got, backSum, len(blob), wantSum)
				}
			})
		}
	}
}

// TestLargePrepare covers a statement text of more than 16 MiB (a generated
// query with a huge literal): COM_STMT_PREPARE itself travels as two
// physical packets, and a second session prepares the same text.
func TestLargePrepare(t *testing.T) {
	px := env.StartProxy(t)
	literal := strings.Repeat("tpproxy-", (17<<20)/8)
	q := "SELECT LENGTH('" + literal + "'), CONCAT(?, '!')"
	for _, tg := range []target{directTarget(t), proxyTarget(px)} {
		t.Run(tg.name, func(t *testing.T) {
			for i := range 2 {
				c := rawConnect(t, tg.addr)
				st := c.mustPrepare(t, q, 1)
				res, err := c.execute(executePacket(st.ID, cursorNone, true, []param{strParam("p")}))
				if err != nil {
					t.Fatal(err)
				}
				wantRow(t, fmt.Sprintf("session %d: a %d-byte statement", i, len(q)), res, strconv.Itoa(len(literal)), "p!")
			}
		})
	}
}
