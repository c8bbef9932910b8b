"""The driver matrix for Python: PyMySQL or mysqlclient (MySQLdb), chosen by
the first argument (pymysql | MySQLdb). Every scenario runs on its own
connection(s) and prints one JSON line (see ../README.md).

Neither driver has server-side prepared statements (both interpolate
parameters client-side), so the "binary"/prepared variants here use SQL-level
PREPARE / EXECUTE ... USING / DEALLOCATE PREPARE, which the proxy has to
handle as well. PyMySQL has no compression and no change-user API.

Environment: DRV_HOST DRV_PORT DRV_USER DRV_PASSWORD DRV_DB DRV_MODE
DRV_PREFIX DRV_USER2 DRV_PASSWORD2 DRV_DB2 DRV_SCENARIOS DRV_TIMEOUT.
"""

import datetime
import decimal
import hashlib
import json
import os
import signal
import sys
import time

MOD = sys.argv[1] if len(sys.argv) > 1 else "pymysql"
if MOD == "pymysql":
    import pymysql as db
    from pymysql.constants import CLIENT
else:
    import MySQLdb as db
    from MySQLdb.constants import CLIENT

E = os.environ
P = E.get("DRV_PREFIX", MOD.lower() + "_x")
TMO = int(E.get("DRV_TIMEOUT", "10"))
BASE = dict(
    host=E.get("DRV_HOST", "127.0.0.1"),
    port=int(E.get("DRV_PORT", "3306")),
    user=E.get("DRV_USER", "app"),
    password=E.get("DRV_PASSWORD", ""),
    database=E.get("DRV_DB", "test"),
    connect_timeout=TMO,
    read_timeout=TMO,
    write_timeout=TMO,
)

opened = []


def connect(**kw):
    args = dict(BASE)
    args.update(kw)
    if MOD == "pymysql":
        args.setdefault("max_allowed_packet", 64 << 20)
    c = db.connect(**args)
    opened.append(c)
    return c


def close_all():
    global opened
    for c in opened:
        try:
            c.close()
        except Exception:
            pass
    opened = []


def emit(o):
    sys.stdout.write(json.dumps(o, default=repr) + "\n")
    sys.stdout.flush()


def err_info(e):
    if isinstance(e, db.MySQLError) and len(e.args) >= 2 and isinstance(e.args[0], int):
        return {"errno": e.args[0], "message": str(e.args[1]), "class": type(e).__name__}
    return {"errno": None, "message": str(e), "class": type(e).__name__}


def attempt(f):
    try:
        return f()
    except Exception as e:  # the error is the observation
        return {"error": err_info(e)}


def val(v):
    if v is None:
        return ["NoneType", None]
    if isinstance(v, (bytes, bytearray)):
        return [type(v).__name__, bytes(v).hex()]
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return [type(v).__name__, v.isoformat()]
    if isinstance(v, (datetime.timedelta, decimal.Decimal)):
        return [type(v).__name__, str(v)]
    if isinstance(v, (set, frozenset)):
        return [type(v).__name__, sorted(str(x) for x in v)]
    if isinstance(v, (int, float, bool)):
        return [type(v).__name__, repr(v)]
    if isinstance(v, str):
        return ["str", v]
    return [type(v).__name__, repr(v)]


def names(cur):
    return [d[0] for d in cur.description] if cur.description else []


def rows_of(cur):
    n = names(cur)
    return [{k: val(v) for k, v in zip(n, r)} for r in cur.fetchall()]


def text(b):
    return b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else b


def description(cur):
    out = []
    for d in cur.description or ():
        out.append({"name": d[0], "type_code": d[1], "display_size": d[2], "internal_size": d[3],
                    "precision": d[4], "scale": d[5], "null_ok": d[6]})
    if MOD == "pymysql" and cur._result is not None and cur._result.fields:
        for o, f in zip(out, cur._result.fields):
            o.update(charsetnr=f.charsetnr, flags=f.flags, length=f.length, org_name=text(f.org_name),
                     table=text(f.table_name), org_table=text(f.org_table), db=text(f.db), scale=f.scale)
    return out


def header(cur, conn, n):
    h = {"execute": n, "rowcount": cur.rowcount, "lastrowid": cur.lastrowid}
    if MOD == "pymysql":
        res = conn._result
        h.update(warnings=res.warning_count if res else None, info=res.message.decode() if res and res.message else "",
                 server_status=res.server_status if res else None)
    else:
        h.update(warnings=conn.warning_count(), info=conn.info() or "")
    return h


def q(conn, sql, args=None):
    cur = conn.cursor()
    n = cur.execute(sql, args)
    return cur, n


def qrows(conn, sql, args=None):
    cur, _ = q(conn, sql, args)
    return rows_of(cur)


def qhdr(conn, sql, args=None):
    cur, n = q(conn, sql, args)
    return header(cur, conn, n)


def all_sets(cur):
    sets = []
    while True:
        if cur.description:
            sets.append({"rows": rows_of(cur), "description": description(cur)})
        else:
            sets.append({"rowcount": cur.rowcount})
        if not cur.nextset():
            break
    return sets


def payload(n):
    abc = "abcdefghijklmnopqrstuvwxyz0123456789"
    s = 12345
    blk = []
    for _ in range(65536):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
        blk.append(abc[(s >> 16) % 36])
    block = "".join(blk)
    return (block * (n // 65536 + 1))[:n]


def md5(b):
    if isinstance(b, str):
        b = b.encode()
    return hashlib.md5(b).hexdigest()


CYR, LAT, EMO = "Привет", "café é", "emoji 😀 ok"


def hexu(s):
    return s.encode().hex().upper()


TYPES_DDL = """CREATE TABLE {t} (id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, de DECIMAL(20,6), f FLOAT, d DOUBLE, b BIT(10),
  dt DATE, tm TIME(6), tmn TIME, dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, y YEAR,
  c CHAR(10), vc VARCHAR(100), bn BINARY(4), vb VARBINARY(10), tx TEXT, bl BLOB,
  en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY NULL) DEFAULT CHARSET=utf8mb4"""
TYPES_ROW = """INSERT INTO {t} VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215,
  -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, -12345678901234.123456, 1.5, 2.25, b'1010101010',
  '2024-02-29', '12:34:56.789012', '-838:59:59', '2024-02-29 23:59:58.123456', '2024-03-01 00:00:01', 2024,
  'ch', 'vär', X'00FF1000', X'DEADBEEF', 'text ü', X'00010203',
  'b', 'x,z', '{{"a": 1, "b": [true, null]}}', ST_GeomFromText('POINT(1 2)'))"""

S = {}


def scenario(f):
    S[f.__name__] = f
    return f


@scenario
def types(r, check):
    t = P + "_types"
    c = connect(charset="utf8mb4", autocommit=True)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, TYPES_DDL.format(t=t))
    q(c, TYPES_ROW.format(t=t))
    q(c, "INSERT INTO %s (id) VALUES (2)" % t)
    cur, _ = q(c, "SELECT * FROM %s ORDER BY id" % t)
    r["text_description"] = description(cur)
    r["text"] = rows_of(cur)
    q(c, "PREPARE s FROM 'SELECT * FROM %s WHERE id >= ? ORDER BY id'" % t)
    q(c, "SET @a = 0")
    cur, _ = q(c, "EXECUTE s USING @a")
    r["sql_prepare"] = rows_of(cur)
    q(c, "DEALLOCATE PREPARE s")
    r["params"] = qrows(c, "SELECT * FROM " + t + " WHERE id >= %s AND vc <> %s ORDER BY id", (0, "x"))
    for name in ("text", "sql_prepare"):
        a = r[name][0]
        check(a["ti"][1] == "-128" and a["tiu"][1] == "255" and a["iu"][1] == "4294967295", name + ": integers")
        check(a["vc"][1] == "vär" and a["tx"][1] == "text ü" and a["en"][1] == "b", name + ": strings")
        check(a["de"][1] == "-12345678901234.123456", name + ": decimal " + str(a["de"]))
        check(all(v[1] is None for k, v in r[name][1].items() if k != "id"), name + ": NULL row")
    q(c, "DROP TABLE " + t)


@scenario
def charset(r, check):
    t = P + "_cs"
    c = connect(charset="utf8mb4", autocommit=True, use_unicode=False)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, k VARCHAR(50) CHARACTER SET koi8r, l VARCHAR(50) CHARACTER SET latin1, "
         "u VARCHAR(50) CHARACTER SET utf8mb4)" % t)
    q(c, "INSERT INTO %s VALUES (1, _utf8mb4 X'%s', _utf8mb4 X'%s', _utf8mb4 X'%s')" % (t, hexu(CYR), hexu(LAT), hexu(EMO)))
    sel = "SELECT k, l, u, HEX(k) AS hk, HEX(l) AS hl, HEX(u) AS hu, 'é' AS lit, HEX('é') AS hlit FROM %s WHERE id = 1" % t
    vs = ("SELECT @@character_set_client AS client, @@character_set_connection AS conn, "
          "@@character_set_results AS results, @@collation_connection AS coll")
    r["set_names"] = {}
    for cs in ("koi8r", "latin1", "utf8mb4"):
        q(c, "SET NAMES " + cs)
        o = {"vars": qrows(c, vs), "bytes": qrows(c, sel)}
        o["driver_charset"] = c.character_set_name() if MOD == "MySQLdb" else c.charset
        r["set_names"][cs] = o
        hk = bytes.fromhex(o["bytes"][0]["hk"][1]).decode()
        check(hk == "F0D2C9D7C5D4", "SET NAMES %s: koi8r bytes %s" % (cs, hk))
    r["connect_option"] = {}
    i = 10
    for cs, col, text in (("koi8r", "k", CYR), ("latin1", "l", LAT), ("utf8mb4", "u", EMO)):
        cc = connect(charset=cs, autocommit=True)
        o = {"driver_charset": cc.character_set_name() if MOD == "MySQLdb" else cc.charset,
             "driver_encoding": getattr(cc, "encoding", None), "vars": qrows(cc, vs)}
        i += 1
        o["insert"] = qhdr(cc, "INSERT INTO " + t + " (id, " + col + ") VALUES (%s, %s)", (i, text))
        got = qrows(cc, "SELECT " + col + " AS v, HEX(" + col + ") AS h FROM " + t + " WHERE id = %s", (i,))
        o["read_back"] = got
        check(got[0]["v"][1] == text, "connect charset %s: read back %r" % (cs, got[0]["v"]))
        o["row1"] = qrows(cc, "SELECT k, l, u, HEX(k) AS hk FROM %s WHERE id = 1" % t)
        r["connect_option"][cs] = o
    q(c, "DROP TABLE " + t)


@scenario
def prepared(r, check):
    t = P + "_ps"
    c = connect(charset="utf8mb4", autocommit=True)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT AUTO_INCREMENT PRIMARY KEY, i BIGINT NULL, d DOUBLE NULL, de DECIMAL(10,2) NULL, "
         "s VARCHAR(50) NULL, b VARBINARY(50) NULL, dt DATETIME(3) NULL, n INT NULL)" % t)
    params = [
        (1, 1.5, decimal.Decimal("12.34"), "one", b"\x00\x01\x02", datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), None),
        (-1099511627776, -0.25, "-0.01", "ünï", b"", "1999-12-31 23:59:59.999", 7),
        (None, None, None, None, None, None, None),
        (9007199254740991, 1e300, "99999999.99", "", b"bin", datetime.date(2000, 1, 1), -1),
        (42, 3.25, 0, "five", b"\xff", None, 0),
    ]
    ins = "INSERT INTO " + t + " (i, d, de, s, b, dt, n) VALUES (%s, %s, %s, %s, %s, %s, %s)"
    r["inserts"] = [qhdr(c, ins, p) for p in params]
    check(all(h["rowcount"] == 1 for h in r["inserts"]), "inserts")
    sel = "SELECT id, i, d, de, s, b, dt, n, %s AS p, %s IS NULL AS pn FROM " + t + " WHERE id = %s"
    ps = ["x", 42, None, 1.5, b"\x01\x02"]
    r["selects"] = [qrows(c, sel, (ps[i], ps[i], i + 1)) for i in range(5)]
    check(r["selects"][2][0]["pn"][1] == "1", "NULL parameter IS NULL")
    # SQL-level prepared statements with user-variable parameters, reused.
    q(c, "PREPARE ins FROM 'INSERT INTO %s (i, s, n) VALUES (?, ?, ?)'" % t)
    r["sql_inserts"] = []
    for a, b, n in ((7, "'seven'", "NULL"), (8, "NULL", "8"), (9, "'nine'", "9")):
        q(c, "SET @a = %s, @b = %s, @n = %s" % (a, b, n))
        r["sql_inserts"].append(qhdr(c, "EXECUTE ins USING @a, @b, @n"))
        r["sql_inserts"][-1]["last_insert_id"] = qrows(c, "SELECT LAST_INSERT_ID() AS id")
    q(c, "DEALLOCATE PREPARE ins")
    r["deallocated_execute"] = attempt(lambda: qhdr(c, "EXECUTE ins USING @a, @b, @n"))
    q(c, "PREPARE sel FROM 'SELECT id, i, s, n, ? IS NULL AS pn FROM %s WHERE id >= ? ORDER BY id'" % t)
    q(c, "SET @x = NULL, @from = 6")
    r["sql_select"] = qrows(c, "EXECUTE sel USING @x, @from")
    q(c, "DEALLOCATE PREPARE sel")
    # Room for only 50 more statements on the server (other connections,
    # such as idle proxies' pools, hold some).
    old = qrows(c, "SELECT @@GLOBAL.max_prepared_stmt_count AS v")[0]["v"][1]
    held = qrows(c, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")[0]["Value"][1]
    q(c, "SET GLOBAL max_prepared_stmt_count = %d" % (int(held) + 50))
    ok, failed, first = 0, 0, None
    try:
        for i in range(200):
            try:
                q(c, "PREPARE p%d FROM 'SELECT ? + %d AS v'" % (i % 7, i))
                q(c, "SET @one = 1")
                got = qrows(c, "EXECUTE p%d USING @one" % (i % 7))
                if got[0]["v"][1] == str(1 + i):
                    ok += 1
                q(c, "DEALLOCATE PREPARE p%d" % (i % 7))
            except Exception as e:
                failed += 1
                if first is None:
                    first = dict(at=i, **err_info(e))
    finally:
        q(c, "SET GLOBAL max_prepared_stmt_count = %d" % int(old))
    r["limit_loop"] = {"ok": ok, "failed": failed, "first_error": first}
    check(ok == 200, "prepare/deallocate loop: %d of 200" % ok)
    q(c, "DROP TABLE " + t)


@scenario
def compression(r, check):
    if MOD == "pymysql":
        return "PyMySQL has no protocol compression"
    t = P + "_comp"
    c = connect(compress=True, charset="utf8mb4", autocommit=True)
    r["status"] = qrows(c, "SHOW SESSION STATUS LIKE 'Compression'")
    r["select1"] = qrows(c, "SELECT 1 AS one")
    cur, _ = q(c, "SELECT REPEAT('abcdefghij', 104858) AS v")
    big = cur.fetchone()[0]
    r["big_result"] = {"length": len(big), "md5": md5(big)}
    check(len(big) == 1048580, "1 MB result")
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, v MEDIUMTEXT)" % t)
    p = payload(1 << 20)
    r["big_insert"] = qhdr(c, "INSERT INTO " + t + " VALUES (1, %s)", (p,))
    r["server_side"] = qrows(c, "SELECT LENGTH(v) AS len, MD5(v) AS md5 FROM " + t)
    cur, _ = q(c, "SELECT v FROM " + t)
    back = cur.fetchone()[0]
    r["read_back"] = {"length": len(back), "md5": md5(back), "equal": back == p}
    check(back == p, "1 MB read back")
    q(c, "DROP TABLE " + t)


@scenario
def batch(r, check):
    t = P + "_batch"
    c = connect(autocommit=True)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20))" % t)
    cur = c.cursor()
    n = cur.executemany("INSERT INTO " + t + " (id, v) VALUES (%s, %s)", [(i, "v%d" % i) for i in range(1, 51)])
    r["executemany"] = header(cur, c, n)
    check(n == 50, "executemany %r" % n)
    r["executemany_duplicate"] = attempt(lambda: header(cur, c, cur.executemany(
        "INSERT INTO " + t + " (id, v) VALUES (%s, %s)", [(51, "a"), (52, "b"), (10, "dup")])))
    r["upsert"] = attempt(lambda: header(cur, c, cur.executemany(
        "INSERT INTO " + t + " (id, v) VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = VALUES(v)", [(1, "one"), (2, "v2"), (60, "new")])))
    r["update_many"] = header(cur, c, cur.executemany("UPDATE " + t + " SET v = %s WHERE id = %s", [("u", 3), ("u", 4), ("u", 999)]))
    r["multirow"] = qhdr(c, "INSERT INTO " + t + " (id, v) VALUES (%s, %s), (%s, %s), (%s, %s)", (70, "p", 71, "q", 72, "r"))
    r["count"] = qrows(c, "SELECT COUNT(*) AS n, SUM(id) AS s FROM " + t)
    check(r["count"][0]["n"][1] == "54", "count %r" % r["count"])
    q(c, "DROP TABLE " + t)


@scenario
def large_packet(r, check):
    t = P + "_big"
    admin = connect(autocommit=True)
    old = qrows(admin, "SELECT @@GLOBAL.max_allowed_packet AS v")[0]["v"][1]
    q(admin, "SET GLOBAL max_allowed_packet = 67108864")
    try:
        c = connect(autocommit=True)
        r["session"] = qrows(c, "SELECT @@max_allowed_packet AS map, @@SESSION.max_allowed_packet AS smap")
        q(c, "DROP TABLE IF EXISTS " + t)
        q(c, "CREATE TABLE %s (id INT PRIMARY KEY, b LONGBLOB)" % t)
        p = payload(20 << 20)
        r["insert_text"] = attempt(lambda: qhdr(c, "INSERT INTO %s VALUES (1, '%s')" % (t, p)))
        # The second row through the driver's (client-side) parameter
        # escaping: still one text query.
        r["insert_param"] = attempt(lambda: qhdr(c, "INSERT INTO " + t + " VALUES (2, %s)", (p[:1 << 20].encode(),)))
        r["server_side"] = attempt(lambda: qrows(c, "SELECT id, LENGTH(b) AS len, MD5(b) AS md5 FROM %s ORDER BY id" % t))

        def back():
            cur, _ = q(c, "SELECT id, b FROM %s ORDER BY id" % t)
            want = {1: p.encode(), 2: p[:1 << 20].encode()}
            return [{"id": i, "length": len(b), "md5": md5(b), "equal": b == want.get(i)} for i, b in cur.fetchall()]
        r["read_back"] = attempt(back)
        check(isinstance(r["read_back"], list) and len(r["read_back"]) == 2 and all(x["equal"] for x in r["read_back"]),
              "20 MB rows read back")
        attempt(lambda: q(c, "DROP TABLE " + t))
    finally:
        q(admin, "SET GLOBAL max_allowed_packet = %d" % int(old))


@scenario
def globals(r, check):
    t = P + "_glob"
    admin = connect(autocommit=True)
    cur, _ = q(admin, "SELECT @@GLOBAL.sql_mode, @@GLOBAL.net_buffer_length")
    mode, nbl = cur.fetchone()
    mode = mode.decode() if isinstance(mode, bytes) else mode
    r["old"] = {"mode": mode, "nbl": int(nbl)}
    q(admin, "SET GLOBAL sql_mode = ''")
    q(admin, "SET GLOBAL net_buffer_length = 32768")
    try:
        c = connect(autocommit=True)
        r["session"] = qrows(c, "SELECT @@SESSION.sql_mode AS mode, @@GLOBAL.sql_mode AS gmode, @@SESSION.net_buffer_length AS nbl")
        q(c, "DROP TABLE IF EXISTS " + t)
        q(c, "CREATE TABLE %s (v VARCHAR(3))" % t)
        r["long_insert"] = attempt(lambda: qhdr(c, "INSERT INTO %s VALUES ('abcdef')" % t))
        r["warnings"] = qrows(c, "SHOW WARNINGS")
        r["stored"] = qrows(c, "SELECT v FROM " + t)
        check("STRICT" not in r["session"][0]["mode"][1], "new session sql_mode %r" % r["session"][0]["mode"])
        q(c, "DROP TABLE " + t)
    finally:
        q(admin, "SET GLOBAL sql_mode = %s", (mode,))
        q(admin, "SET GLOBAL net_buffer_length = %d" % int(nbl))
    c2 = connect(autocommit=True)
    r["after_restore"] = qrows(c2, "SELECT @@SESSION.sql_mode AS mode, @@SESSION.net_buffer_length AS nbl")
    check("STRICT_TRANS_TABLES" in r["after_restore"][0]["mode"][1], "sql_mode after restore")


@scenario
def change_user(r, check):
    if MOD == "pymysql":
        return "PyMySQL has no change-user API"
    c = connect(autocommit=True)
    q(c, "SET @v = 1")
    who = "SELECT CURRENT_USER() AS cu, SUBSTRING_INDEX(USER(), '@', 1) AS u, DATABASE() AS db, @v AS v"
    r["before"] = qrows(c, who)
    c.change_user(E["DRV_USER2"], E["DRV_PASSWORD2"], E["DRV_DB2"])
    r["after"] = qrows(c, who)
    a = r["after"][0]
    check(a["u"][1] == E["DRV_USER2"] and a["db"][1] == E["DRV_DB2"] and a["v"][1] is None, "after change_user")
    c.change_user(BASE["user"], BASE["password"], BASE["database"])
    r["back"] = qrows(c, who)
    bad = connect(autocommit=True)
    r["bad_password"] = attempt(lambda: bad.change_user(E["DRV_USER2"], "wrong", E["DRV_DB2"]) or "accepted")


@scenario
def autocommit0(r, check):
    t = P + "_ac"
    admin = connect(autocommit=True)
    q(admin, "DROP TABLE IF EXISTS " + t)
    q(admin, "CREATE TABLE %s (id INT PRIMARY KEY)" % t)

    def step(f):
        try:
            v = f()
            return v if v is not None else "ok"
        except Exception as e:
            i = err_info(e)
            return {"errno": i["errno"], "message": i["message"]}
    conns = []
    r["sessions"] = []
    for i in range(12):
        s = {}
        holder = []
        s["connect"] = step(lambda: holder.append(connect()))  # autocommit off: the driver's default
        conns.append(holder[0] if holder else None)
        if holder:
            s["select"] = step(lambda: qrows(holder[0], "SELECT COUNT(*) AS n, @@autocommit AS ac FROM " + t))
            # The SELECT opened a transaction (InnoDB, autocommit=0): an app
            # that ends it holds no backend while idle; one idle inside a
            # transaction does, as it holds a server thread directly.
            s["commit0"] = step(lambda: holder[0].commit())
        r["sessions"].append(s)
    time.sleep(2)
    for i, cn in enumerate(conns):
        s = r["sessions"][i]
        if cn is None:
            continue
        s["insert"] = step(lambda: qhdr(cn, "INSERT INTO %s VALUES (%d)" % (t, i)) and None)
        s["commit"] = step(lambda: cn.commit())
    # Count once the sessions are gone (through the proxy their backends
    # would still be pinned).
    for cn in conns:
        if cn is not None:
            attempt(cn.close)
    time.sleep(0.5)
    r["count"] = qrows(admin, "SELECT COUNT(*) AS n FROM " + t)
    check(r["count"][0]["n"][1] == "12", "committed rows %r" % r["count"])
    q(admin, "DROP TABLE " + t)


PROC = """CREATE PROCEDURE {p}(IN n INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE x INT;
  DECLARE total INT DEFAULT 0;
  DECLARE cur CURSOR FOR SELECT id FROM {t} WHERE id <= n ORDER BY id;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN cur;
  rd: LOOP
    FETCH cur INTO x;
    IF done THEN LEAVE rd; END IF;
    SET total = total + x;
  END LOOP;
  CLOSE cur;
  SELECT total;
  SELECT id, v FROM {t} WHERE id <= n ORDER BY id;
  SELECT n AS n, 'done' AS status;
END"""


@scenario
def cursor_call(r, check):
    t, p = P + "_cc", P + "_proc"
    c = connect(autocommit=True)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "DROP PROCEDURE IF EXISTS " + p)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(10))" % t)
    q(c, "INSERT INTO %s VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')" % t)
    q(c, PROC.format(p=p, t=t))

    def call(sql):
        cur, _ = q(c, sql)
        return all_sets(cur)
    r["text"] = attempt(lambda: call("CALL %s(3)" % p))
    r["after_text"] = attempt(lambda: qrows(c, "SELECT 1 AS one"))

    def callproc():
        cur = c.cursor()
        cur.callproc(p, (2,))
        return all_sets(cur)
    r["callproc"] = attempt(callproc)
    r["after_callproc"] = attempt(lambda: qrows(c, "SELECT 2 AS two"))

    def sql_prepared():
        q(c, "PREPARE cc FROM 'CALL %s(?)'" % p)
        q(c, "SET @n = 4")
        out = call("EXECUTE cc USING @n")
        q(c, "DEALLOCATE PREPARE cc")
        return out
    r["sql_prepared"] = attempt(sql_prepared)
    r["after_prepared"] = attempt(lambda: qrows(c, "SELECT 3 AS three"))
    check(isinstance(r["text"], list) and len(r["text"]) == 4, "text CALL: 3 result sets + OK")
    check(isinstance(r["sql_prepared"], list) and len(r["sql_prepared"]) == 4, "EXECUTE CALL: 3 result sets + OK")
    q(c, "DROP PROCEDURE " + p)
    q(c, "DROP TABLE " + t)


@scenario
def found_rows(r, check):
    t = P + "_fr"
    c = connect(autocommit=True)
    q(c, "DROP TABLE IF EXISTS %s, %s2" % (t, t))
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY)" % t)
    q(c, "CREATE TABLE %s2 (id INT PRIMARY KEY)" % t)
    q(c, "INSERT INTO %s VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)" % t)

    def fr():
        return qrows(c, "SELECT FOUND_ROWS() AS fr")
    r["limit"] = qrows(c, "SELECT id FROM %s ORDER BY id LIMIT 2, 1" % t)
    r["limit_fr"] = fr()
    r["calc"] = qrows(c, "SELECT SQL_CALC_FOUND_ROWS id FROM %s ORDER BY id LIMIT 2, 1" % t)
    r["calc_fr"] = fr()
    check(r["calc_fr"][0]["fr"][1] == "10", "SQL_CALC_FOUND_ROWS %r" % r["calc_fr"])
    r["insert_select"] = qhdr(c, "INSERT INTO %s2 SELECT id FROM %s WHERE 1 = 0" % (t, t))
    r["insert_select_fr"] = fr()
    r["update"] = qhdr(c, "UPDATE %s SET id = id WHERE id < 3" % t)
    r["update_row_count"] = qrows(c, "SELECT ROW_COUNT() AS rc")
    q(c, "PREPARE c FROM 'SELECT SQL_CALC_FOUND_ROWS id FROM %s ORDER BY id LIMIT ?, 1'" % t)
    q(c, "SET @off = 4")
    r["ps_calc"] = qrows(c, "EXECUTE c USING @off")
    q(c, "PREPARE f FROM 'SELECT FOUND_ROWS() AS fr'")
    r["ps_calc_fr"] = qrows(c, "EXECUTE f")
    qrows(c, "SELECT SQL_CALC_FOUND_ROWS id FROM %s WHERE id > 3 LIMIT 1" % t)
    r["text_calc_then_ps_fr"] = qrows(c, "EXECUTE f")
    q(c, "DROP TABLE %s, %s2" % (t, t))


@scenario
def kill_expr(r, check):
    c = connect(autocommit=True)
    r["text"] = []
    for s in ("KILL QUERY (SELECT CONNECTION_ID() + 1000000)", "KILL (SELECT CONNECTION_ID() + 1000000)",
              "KILL QUERY CONNECTION_ID() + 1000000", "KILL CONNECTION CONNECTION_ID() + 1000000", "KILL 987654321"):
        e = attempt(lambda: q(c, s) and "ok")
        r["text"].append({"sql": s, "result": e, "alive": attempt(lambda: qrows(c, "SELECT 1 AS one"))})
        check(isinstance(e, dict) and e.get("error", {}).get("errno") == 1094, "%s: want 1094, got %r" % (s, e))
    r["sql_prepared"] = []
    for prep, using in (("KILL ?", "987654321"), ("KILL QUERY ?", "987654321"),
                        ("KILL QUERY (SELECT ? + CONNECTION_ID())", "1000000")):
        def run():
            q(c, "PREPARE k FROM '%s'" % prep)
            q(c, "SET @id = " + using)
            q(c, "EXECUTE k USING @id")
            return "ok"
        e = attempt(run)
        attempt(lambda: q(c, "DEALLOCATE PREPARE k"))
        r["sql_prepared"].append({"sql": prep, "result": e, "alive": attempt(lambda: qrows(c, "SELECT 1 AS one"))})


@scenario
def metadata(r, check):
    t = P + "_md"
    # MySQLdb returns bytes (the column values are in the results charset);
    # PyMySQL cannot convert DECIMAL from bytes, so it decodes, and may fail
    # to decode latin1 results as UTF-8: that failure is its observation.
    c = connect(charset="utf8mb4", autocommit=True, use_unicode=(MOD == "pymysql"))
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1, "
         "js JSON, bl BLOB, de DECIMAL(8,3))" % t)
    q(c, "INSERT INTO %s VALUES (1, 'äb', 'é', '{\"k\": [1, 2]}', X'0102', 12.5)" % t)
    sel = ("SELECT 1 AS i, 1.5 AS d, 'abc' AS s, _utf8mb4'é' AS u, CONCAT('a', 1) AS c, UPPER(s) AS us, "
           "LENGTH(l) AS ll, l, js, JSON_OBJECT('k', 1) AS jo, bl, de, NULL AS n, id FROM " + t)
    for cs in ("utf8mb4", "latin1"):
        # A connection per charset: PyMySQL's connection is unusable after a
        # result it failed to decode.
        c = connect(charset="utf8mb4", autocommit=True, use_unicode=(MOD == "pymysql"))
        if cs != "utf8mb4":
            q(c, "SET NAMES " + cs)
        o = {}
        cur = c.cursor()

        def read():
            cur.execute(sel)
            return rows_of(cur)
        o["rows"] = attempt(read)
        o["description"] = description(cur)
        if MOD == "MySQLdb":
            c.query(sel)
            res = c.store_result()
            o["describe"] = [list(d) for d in res.describe()]
            o["field_flags"] = list(res.field_flags())
        o["driver_charset"] = c.character_set_name() if MOD == "MySQLdb" else c.charset
        r[cs] = o
    us = r["utf8mb4"]["rows"][0]["us"]
    check(us[1] in ("ÄB", "ÄB".encode().hex()), "UPPER(äb) %r" % us)
    q(connect(autocommit=True), "DROP TABLE " + t)


@scenario
def greeting_charset(r, check):
    c = connect(autocommit=True)
    if MOD == "MySQLdb":
        r["driver"] = {"character_set_name": c.character_set_name(), "encoding": getattr(c, "encoding", None),
                       "character_set_info": c.get_character_set_info()}
    else:
        r["driver"] = {"charset": c.charset, "encoding": c.encoding, "server_charset": getattr(c, "server_charset", None)}
    r["vars"] = qrows(c, "SELECT @@character_set_client AS client, @@character_set_connection AS conn, "
                         "@@character_set_results AS results, @@collation_connection AS coll, @@character_set_server AS server")
    r["roundtrip"] = attempt(lambda: qrows(c, "SELECT 'é' AS s, HEX('é') AS h"))


@scenario
def multi(r, check):
    t = P + "_multi"
    c = connect(autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)
    q(c, "DROP TABLE IF EXISTS " + t)
    q(c, "CREATE TABLE %s (id INT PRIMARY KEY, v INT)" % t)
    cur, _ = q(c, "SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; INSERT INTO {t} VALUES (1, 1), (2, 2); "
                  "UPDATE {t} SET v = v + 1 WHERE id > 0; SELECT CAST('abc' AS SIGNED) AS w; SHOW WARNINGS".format(t=t))
    r["sets"] = all_sets(cur)
    check(len(r["sets"]) == 6, "six results: %d" % len(r["sets"]))

    def midway():
        cur, _ = q(c, "SELECT 1 AS a; SELECT * FROM %s_nosuch; SELECT 2 AS b" % t)
        return all_sets(cur)
    r["error_midway"] = attempt(midway)
    r["after_error"] = attempt(lambda: qrows(c, "SELECT 3 AS three"))
    r["warning_select"] = qrows(c, "SELECT CAST('abc' AS SIGNED) AS w")
    r["show_warnings"] = qrows(c, "SHOW WARNINGS")
    r["warning_count"] = qrows(c, "SELECT @@warning_count AS wc")
    r["insert_ignore"] = qhdr(c, "INSERT IGNORE INTO %s VALUES (1, 5)" % t)
    r["insert_ignore_warnings"] = qrows(c, "SHOW WARNINGS")
    r["count_warnings"] = qrows(c, "SHOW COUNT(*) WARNINGS")
    q(c, "DROP TABLE " + t)


class ScenarioTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise ScenarioTimeout("scenario timed out after %d s" % (3 * TMO))


def ms(t0):
    return int((time.monotonic() - t0) * 1000)


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    want = [s for s in E.get("DRV_SCENARIOS", ",".join(S)).split(",") if s]
    for name in want:
        emit({"event": "start", "scenario": name})
        f = S.get(name)
        if f is None:
            emit({"scenario": name, "ok": False, "result": None, "error": "unknown scenario"})
            continue
        r, fails, err, skip = {}, [], "", None

        def check(cond, msg):
            if not cond:
                fails.append(msg)
        signal.alarm(3 * TMO)
        t0 = time.monotonic()
        try:
            skip = f(r, check)
        except Exception as e:
            i = err_info(e)
            err = "%s %s %s" % (i["class"], i["errno"] or "", i["message"])
        finally:
            signal.alarm(0)
        close_all()
        if skip:
            emit({"scenario": name, "ok": True, "skip": skip, "result": None, "elapsed_ms": ms(t0)})
            continue
        emit({"scenario": name, "ok": not err and not fails, "result": r, "error": "; ".join([x for x in [err] + fails if x]),
              "elapsed_ms": ms(t0)})


main()
