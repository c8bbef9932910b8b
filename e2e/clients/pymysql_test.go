package clients

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// systemPython is the distribution's interpreter, which has PyMySQL from
// the python3-pymysql package (a pyenv python3 may come first on PATH).
const systemPython = "/usr/bin/python3"

// pymysqlScript drives PyMySQL through its paces and prints one line per
// step; any exception ends it with a traceback and a non-zero status.
const pymysqlScript = `
import sys
import pymysql
from pymysql.constants import CLIENT

host, port, user, password, db = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def connect(**kw):
    return pymysql.connect(host=host, port=port, user=user, password=password, database=db,
                           charset="utf8mb4", connect_timeout=10, read_timeout=30, write_timeout=30, **kw)

conn = connect(client_flag=CLIENT.MULTI_STATEMENTS, autocommit=True)
cur = conn.cursor()
cur.execute("DROP TABLE IF EXISTS py_t")
cur.execute("CREATE TABLE py_t (id INT PRIMARY KEY, name VARCHAR(50), price DECIMAL(10,2), note TEXT) DEFAULT CHARSET=utf8mb4")
n = cur.execute("INSERT INTO py_t VALUES (%s, %s, %s, %s)", (1, "O'Reilly \\ \"x\"", "9.99", "ünï 😀"))
assert n == 1, n
print("insert", n)

rows = [(i, "name%d" % i, "%d.50" % i, None) for i in range(2, 52)]
n = cur.executemany("INSERT INTO py_t VALUES (%s, %s, %s, %s)", rows)
assert n == 50, n
print("executemany", n)

cur.execute("SELECT id, name, price, note FROM py_t WHERE id IN (1, 2) ORDER BY id")
got = cur.fetchall()
assert got[0][1] == "O'Reilly \\ \"x\"" and str(got[0][2]) == "9.99" and got[0][3] == "ünï 😀", got
assert got[1] == (2, "name2", got[1][2], None) and str(got[1][2]) == "2.50", got
print("select", len(got))

cur.execute("SELECT COUNT(*), SUM(price) FROM py_t")
count, total = cur.fetchone()
assert count == 51, count
print("count", count, total)

# A transaction that rolls back leaves nothing behind.
conn.begin()
cur.execute("INSERT INTO py_t VALUES (100, 'tx', 1, NULL)")
cur.execute("DELETE FROM py_t WHERE id < 10")
cur.execute("SELECT COUNT(*) FROM py_t")
inside = cur.fetchone()[0]
assert inside == 43, inside
conn.rollback()
cur.execute("SELECT COUNT(*) FROM py_t")
after = cur.fetchone()[0]
assert after == 51, after
print("rollback", inside, after)

# And one that commits.
conn.begin()
cur.execute("UPDATE py_t SET note = 'committed' WHERE id = 2")
conn.commit()
cur.execute("SELECT note FROM py_t WHERE id = 2")
assert cur.fetchone()[0] == "committed"
print("commit ok")

# A multi-statement query read with nextset.
cur.execute("SELECT 1 AS a; SELECT 'two' AS b, 2 AS c; UPDATE py_t SET price = price WHERE id = 1; SELECT COUNT(*) FROM py_t")
sets = [cur.fetchall()]
while cur.nextset():
    sets.append(cur.fetchall())
assert sets[0] == ((1,),), sets
assert sets[1] == (("two", 2),), sets
assert sets[2] == (), sets
assert sets[3] == ((51,),), sets
print("nextset", len(sets))

# A server error is an exception, and the connection goes on.
try:
    cur.execute("SELECT * FROM py_no_such_table")
    raise SystemExit("expected an error")
except pymysql.err.ProgrammingError as e:
    assert e.args[0] == 1146, e.args
    print("error", e.args[0])
cur.execute("SELECT 42")
assert cur.fetchone()[0] == 42
conn.ping(reconnect=False)
print("ping ok")

# A second connection without autocommit: PyMySQL's default.
c2 = connect()
cur2 = c2.cursor()
cur2.execute("INSERT INTO py_t VALUES (200, 'uncommitted', 0, NULL)")
c2.rollback()
cur2.execute("SELECT COUNT(*) FROM py_t WHERE id = 200")
assert cur2.fetchone()[0] == 0
c2.close()
print("autocommit off ok")

cur.execute("DROP TABLE py_t")
conn.close()
print("done")
`

func TestPyMySQL(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(systemPython); err != nil {
		if inCI() {
			t.Fatalf("CI=true but %s is missing: %v", systemPython, err)
		}
		t.Skipf("%s missing: %v", systemPython, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, systemPython, "-c", "import pymysql").CombinedOutput(); err != nil {
		if inCI() {
			t.Fatalf("CI=true but PyMySQL is not importable by %s: %v\n%s", systemPython, err, out)
		}
		t.Skipf("PyMySQL not installed for %s: %s", systemPython, out)
	}
	px := env.StartProxy(t)
	script := filepath.Join(t.TempDir(), "pymysql_e2e.py")
	if err := os.WriteFile(script, []byte(pymysqlScript), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, systemPython, script, px.Host, strconv.Itoa(px.Port),
		proxytest.User, proxytest.Password, proxytest.DB)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("PyMySQL script hung:\n%s", out)
	}
	if err != nil {
		t.Fatalf("PyMySQL script failed: %v\n%s", err, out)
	}
	for _, want := range []string{"insert 1", "executemany 50", "rollback 43 51", "nextset 4", "error 1146", "ping ok", "autocommit off ok", "done"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("PyMySQL output lacks %q:\n%s", want, out)
		}
	}
	if st := px.Server.Stats(); st.Accepted < 2 {
		t.Errorf("PyMySQL made %d connections through the proxy, want 2", st.Accepted)
	}
}
