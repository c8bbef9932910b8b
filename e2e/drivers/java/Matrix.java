// The driver matrix for Java: MariaDB Connector/J (Debian's libmariadb-java,
// 2.7). Every scenario runs on its own connection(s) and prints one JSON
// line (see ../README.md). Compiled by the Go test with javac at test time.
//
// Environment: DRV_HOST DRV_PORT DRV_USER DRV_PASSWORD DRV_DB DRV_MODE
// DRV_PREFIX DRV_USER2 DRV_PASSWORD2 DRV_DB2 DRV_SCENARIOS DRV_TIMEOUT.

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.BatchUpdateException;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public class Matrix {
    static final Map<String, String> E = System.getenv();
    static final String P = E.getOrDefault("DRV_PREFIX", "java_x");
    static final int TMO = Integer.parseInt(E.getOrDefault("DRV_TIMEOUT", "10"));
    static final String USER = E.getOrDefault("DRV_USER", "app");
    static final String PASS = E.getOrDefault("DRV_PASSWORD", "");
    static final String DB = E.getOrDefault("DRV_DB", "test");
    static final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r);
        t.setDaemon(true);
        return t;
    });
    static final List<Connection> opened = new ArrayList<>();

    /** Thrown by a scenario the driver cannot express. */
    static class Skip extends RuntimeException {
        Skip(String why) { super(why); }
    }

    interface Scenario { void run(Map<String, Object> r, List<String> fails) throws Exception; }

    interface Body { Object get() throws Exception; }

    static Connection connect(String opts) throws SQLException {
        String url = "jdbc:mariadb://" + E.getOrDefault("DRV_HOST", "127.0.0.1") + ":" + E.getOrDefault("DRV_PORT", "3306")
            + "/" + DB + "?connectTimeout=" + (TMO * 1000) + "&socketTimeout=" + (TMO * 1000)
            + (opts.isEmpty() ? "" : "&" + opts);
        Connection c = DriverManager.getConnection(url, USER, PASS);
        synchronized (opened) { opened.add(c); }
        return c;
    }

    static Connection connect() throws SQLException { return connect(""); }

    static void closeAll() {
        List<Connection> cs;
        synchronized (opened) { cs = new ArrayList<>(opened); opened.clear(); }
        for (Connection c : cs) {
            try { c.abort(pool); } catch (Exception e) { /* gone */ }
        }
    }

    // ---- JSON ----

    static String json(Object o) {
        StringBuilder b = new StringBuilder();
        json(b, o);
        return b.toString();
    }

    @SuppressWarnings("unchecked")
    static void json(StringBuilder b, Object o) {
        if (o == null) { b.append("null"); return; }
        if (o instanceof Boolean || o instanceof Integer || o instanceof Long) { b.append(o); return; }
        if (o instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                if (!first) b.append(',');
                first = false;
                str(b, e.getKey());
                b.append(':');
                json(b, e.getValue());
            }
            b.append('}');
            return;
        }
        if (o instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object e : (List<Object>) o) {
                if (!first) b.append(',');
                first = false;
                json(b, e);
            }
            b.append(']');
            return;
        }
        if (o instanceof int[]) {
            List<Object> l = new ArrayList<>();
            for (int i : (int[]) o) l.add(i);
            json(b, l);
            return;
        }
        str(b, o.toString());
    }

    static void str(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
                    else b.append(ch);
            }
        }
        b.append('"');
    }

    static void emit(Map<String, Object> o) {
        System.out.println(json(o));
        System.out.flush();
    }

    static Map<String, Object> m(Object... kv) {
        Map<String, Object> o = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) o.put((String) kv[i], kv[i + 1]);
        return o;
    }

    // ---- values ----

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    static String md5(byte[] b) throws Exception {
        return hex(MessageDigest.getInstance("MD5").digest(b));
    }

    /** val is a value as the driver returned it: [class, text]. */
    static List<Object> val(Object v) {
        if (v == null) return Arrays.asList("null", null);
        String cls = v.getClass().getName();
        if (v instanceof byte[]) return Arrays.asList(cls, hex((byte[]) v));
        if (v instanceof BigDecimal) return Arrays.asList(cls, ((BigDecimal) v).toPlainString());
        return Arrays.asList(cls, v.toString());
    }

    static Map<String, Object> err(Throwable e) {
        Map<String, Object> o = new LinkedHashMap<>();
        if (e instanceof SQLException) {
            SQLException s = (SQLException) e;
            o.put("errno", s.getErrorCode());
            o.put("sqlstate", s.getSQLState());
        } else {
            o.put("errno", null);
        }
        o.put("class", e.getClass().getSimpleName());
        o.put("message", e.getMessage());
        return o;
    }

    static Object attempt(Body f) {
        try {
            return f.get();
        } catch (Throwable e) {
            return m("error", err(e));
        }
    }

    static List<Object> meta(ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        List<Object> out = new ArrayList<>();
        for (int i = 1; i <= md.getColumnCount(); i++) {
            out.add(m("label", md.getColumnLabel(i), "name", md.getColumnName(i), "table", md.getTableName(i),
                "type", md.getColumnType(i), "typeName", md.getColumnTypeName(i), "className", md.getColumnClassName(i),
                "precision", md.getPrecision(i), "scale", md.getScale(i), "displaySize", md.getColumnDisplaySize(i),
                "signed", md.isSigned(i), "nullable", md.isNullable(i)));
        }
        return out;
    }

    static List<Object> rows(ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        List<Object> out = new ArrayList<>();
        while (rs.next()) {
            Map<String, Object> row = new LinkedHashMap<>();
            for (int i = 1; i <= md.getColumnCount(); i++) row.put(md.getColumnLabel(i), val(rs.getObject(i)));
            out.add(row);
        }
        return out;
    }

    static Map<String, Object> rowsMeta(ResultSet rs) throws SQLException {
        List<Object> md = meta(rs);
        return m("rows", rows(rs), "meta", md);
    }

    static List<Object> q(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rows(rs);
        }
    }

    static Map<String, Object> exec(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            boolean isRs = st.execute(sql);
            Map<String, Object> o = m("resultSet", isRs, "updateCount", st.getUpdateCount(), "warnings", warnings(st.getWarnings()));
            return o;
        }
    }

    static List<Object> warnings(SQLWarning w) {
        List<Object> out = new ArrayList<>();
        for (; w != null; w = w.getNextWarning()) out.add(m("errno", w.getErrorCode(), "sqlstate", w.getSQLState(), "message", w.getMessage()));
        return out;
    }

    static String s(Object row, String col) {
        @SuppressWarnings("unchecked")
        List<Object> v = (List<Object>) ((Map<String, Object>) row).get(col);
        return v == null ? null : (String) v.get(1);
    }

    /** allSets reads every result of an executed statement. */
    static List<Object> allSets(Statement st, boolean isRs) throws SQLException {
        List<Object> sets = new ArrayList<>();
        while (true) {
            if (isRs) {
                try (ResultSet rs = st.getResultSet()) { sets.add(rowsMeta(rs)); }
            } else {
                int n = st.getUpdateCount();
                if (n == -1) break;
                sets.add(m("updateCount", n));
            }
            isRs = st.getMoreResults();
        }
        return sets;
    }

    static String payload(int n) {
        String abc = "abcdefghijklmnopqrstuvwxyz0123456789";
        long s = 12345;
        StringBuilder blk = new StringBuilder(65536);
        for (int i = 0; i < 65536; i++) {
            s = (s * 1103515245L + 12345L) & 0x7fffffffL;
            blk.append(abc.charAt((int) ((s >> 16) % 36)));
        }
        StringBuilder out = new StringBuilder(n + 65536);
        while (out.length() < n) out.append(blk);
        out.setLength(n);
        return out.toString();
    }

    static final String CYR = "Привет", LAT = "café é", EMO = "emoji \uD83D\uDE00 ok";

    static String hexu(String s) { return hex(s.getBytes(StandardCharsets.UTF_8)).toUpperCase(); }

    static String typesDDL(String t) {
        return "CREATE TABLE " + t + " (id INT PRIMARY KEY,"
            + " ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,"
            + " i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, de DECIMAL(20,6), f FLOAT, d DOUBLE, b BIT(10),"
            + " dt DATE, tm TIME(6), tmn TIME, dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, y YEAR,"
            + " c CHAR(10), vc VARCHAR(100), bn BINARY(4), vb VARBINARY(10), tx TEXT, bl BLOB,"
            + " en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY NULL) DEFAULT CHARSET=utf8mb4";
    }

    static String typesRow(String t) {
        return "INSERT INTO " + t + " VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215,"
            + " -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, -12345678901234.123456, 1.5, 2.25, b'1010101010',"
            + " '2024-02-29', '12:34:56.789012', '-838:59:59', '2024-02-29 23:59:58.123456', '2024-03-01 00:00:01', 2024,"
            + " 'ch', 'vär', X'00FF1000', X'DEADBEEF', 'text ü', X'00010203',"
            + " 'b', 'x,z', '{\"a\": 1, \"b\": [true, null]}', ST_GeomFromText('POINT(1 2)'))";
    }

    static final Map<String, Scenario> S = new LinkedHashMap<>();

    static void check(List<String> fails, boolean cond, String msg) {
        if (!cond) fails.add(msg);
    }

    static {
        S.put("types", (r, fails) -> {
            String t = P + "_types";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, typesDDL(t));
            exec(c, typesRow(t));
            exec(c, "INSERT INTO " + t + " (id) VALUES (2)");
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM " + t + " ORDER BY id")) {
                r.put("text", rowsMeta(rs));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM " + t + " WHERE id >= ? ORDER BY id")) {
                ps.setInt(1, 0);
                try (ResultSet rs = ps.executeQuery()) { r.put("binary", rowsMeta(rs)); }
            }
            for (String name : new String[] {"text", "binary"}) {
                @SuppressWarnings("unchecked")
                List<Object> rs = (List<Object>) ((Map<String, Object>) r.get(name)).get("rows");
                Object a = rs.get(0);
                check(fails, "-128".equals(s(a, "ti")) && "255".equals(s(a, "tiu")) && "4294967295".equals(s(a, "iu")), name + ": integers");
                check(fails, "vär".equals(s(a, "vc")) && "text ü".equals(s(a, "tx")) && "b".equals(s(a, "en")), name + ": strings");
                check(fails, "-12345678901234.123456".equals(s(a, "de")), name + ": decimal " + s(a, "de"));
                boolean nulls = true;
                @SuppressWarnings("unchecked")
                Map<String, Object> nr = (Map<String, Object>) rs.get(1);
                for (String k : nr.keySet()) if (!k.equals("id") && s(nr, k) != null) nulls = false;
                check(fails, nulls, name + ": NULL row");
            }
            exec(c, "DROP TABLE " + t);
        });

        S.put("charset", (r, fails) -> {
            String t = P + "_cs";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, k VARCHAR(50) CHARACTER SET koi8r, l VARCHAR(50) CHARACTER SET latin1, u VARCHAR(50) CHARACTER SET utf8mb4)");
            exec(c, "INSERT INTO " + t + " VALUES (1, _utf8mb4 X'" + hexu(CYR) + "', _utf8mb4 X'" + hexu(LAT) + "', _utf8mb4 X'" + hexu(EMO) + "')");
            String sel = "SELECT k, l, u, HEX(k) AS hk, HEX(l) AS hl, HEX(u) AS hu, 'é' AS lit, HEX('é') AS hlit FROM " + t + " WHERE id = ";
            String vars = "SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll";
            Map<String, Object> sn = new LinkedHashMap<>();
            for (String cs : new String[] {"koi8r", "latin1", "utf8mb4"}) {
                exec(c, "SET NAMES " + cs);
                Map<String, Object> o = m("vars", q(c, vars), "text", q(c, sel + "1"));
                try (PreparedStatement ps = c.prepareStatement(sel + "?")) {
                    ps.setInt(1, 1);
                    try (ResultSet rs = ps.executeQuery()) { o.put("binary", rows(rs)); }
                }
                sn.put(cs, o);
                @SuppressWarnings("unchecked")
                List<Object> text = (List<Object>) o.get("text");
                check(fails, "F0D2C9D7C5D4".equals(s(text.get(0), "hk")), "SET NAMES " + cs + ": koi8r bytes " + s(text.get(0), "hk"));
            }
            r.put("set_names", sn);
            // Connector/J has no connection charset option: it always talks
            // utf8mb4. The round trip through it:
            Connection cc = connect();
            r.put("connect_default_vars", q(cc, vars));
            try (PreparedStatement ps = cc.prepareStatement("INSERT INTO " + t + " (id, k, l, u) VALUES (?, ?, ?, ?)")) {
                ps.setInt(1, 11);
                ps.setString(2, CYR);
                ps.setString(3, LAT);
                ps.setString(4, EMO);
                r.put("insert", ps.executeUpdate());
            }
            List<Object> back = q(cc, "SELECT k, l, u, HEX(k) AS hk, HEX(l) AS hl, HEX(u) AS hu FROM " + t + " WHERE id = 11");
            r.put("read_back", back);
            check(fails, CYR.equals(s(back.get(0), "k")) && LAT.equals(s(back.get(0), "l")) && EMO.equals(s(back.get(0), "u")), "utf8mb4 round trip");
            exec(c, "DROP TABLE " + t);
        });

        S.put("prepared", (r, fails) -> {
            String t = P + "_ps";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT AUTO_INCREMENT PRIMARY KEY, i BIGINT NULL, d DOUBLE NULL, de DECIMAL(10,2) NULL,"
                + " s VARCHAR(50) NULL, b VARBINARY(50) NULL, dt DATETIME(3) NULL, n INT NULL)");
            Object[][] params = {
                {1L, 1.5, new BigDecimal("12.34"), "one", new byte[] {0, 1, 2}, Timestamp.valueOf("2024-01-02 03:04:05.678"), null},
                {-1099511627776L, -0.25, new BigDecimal("-0.01"), "ünï", new byte[0], Timestamp.valueOf("1999-12-31 23:59:59.999"), 7},
                {null, null, null, null, null, null, null},
                {9007199254740991L, 1e300, new BigDecimal("99999999.99"), "", "bin".getBytes(), Timestamp.valueOf("2000-01-01 00:00:00"), -1},
                {42L, 3.25, BigDecimal.ZERO, "five", new byte[] {(byte) 0xff}, null, 0},
            };
            List<Object> inserts = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (i, d, de, s, b, dt, n) VALUES (?, ?, ?, ?, ?, ?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                r.put("param_count", ps.getParameterMetaData().getParameterCount());
                for (Object[] p : params) {
                    if (p[0] == null) ps.setNull(1, Types.BIGINT); else ps.setLong(1, (Long) p[0]);
                    if (p[1] == null) ps.setNull(2, Types.DOUBLE); else ps.setDouble(2, (Double) p[1]);
                    ps.setBigDecimal(3, (BigDecimal) p[2]);
                    ps.setString(4, (String) p[3]);
                    ps.setBytes(5, (byte[]) p[4]);
                    ps.setTimestamp(6, (Timestamp) p[5]);
                    if (p[6] == null) ps.setNull(7, Types.INTEGER); else ps.setInt(7, (Integer) p[6]);
                    int n = ps.executeUpdate();
                    long key = -1;
                    try (ResultSet k = ps.getGeneratedKeys()) { if (k.next()) key = k.getLong(1); }
                    inserts.add(m("updateCount", n, "generatedKey", key));
                    check(fails, n == 1, "insert affected " + n);
                }
            }
            r.put("inserts", inserts);
            List<Object> selects = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT id, i, d, de, s, b, dt, n, ? AS p, ? IS NULL AS pn FROM " + t + " WHERE id = ?")) {
                Object[] pv = {"x", 42, null, 1.5, new byte[] {1, 2}};
                for (int i = 0; i < 5; i++) {
                    if (pv[i] == null) { ps.setNull(1, Types.VARCHAR); ps.setNull(2, Types.VARCHAR); }
                    else { ps.setObject(1, pv[i]); ps.setObject(2, pv[i]); }
                    ps.setInt(3, i + 1);
                    try (ResultSet rs = ps.executeQuery()) { selects.add(rows(rs)); }
                }
            }
            r.put("selects", selects);
            @SuppressWarnings("unchecked")
            List<Object> third = (List<Object>) selects.get(2);
            check(fails, "1".equals(s(third.get(0), "pn")), "NULL parameter IS NULL");
            // prepare/close 200 times with room for only 50 more statements
            // on the server (other connections, such as idle proxies' pools,
            // hold some), on a connection without Connector/J's statement
            // cache.
            Connection lc = connect("useServerPrepStmts=true&cachePrepStmts=false");
            String old = s(q(lc, "SELECT @@GLOBAL.max_prepared_stmt_count AS v").get(0), "v");
            String held = s(q(lc, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").get(0), "Value");
            exec(lc, "SET GLOBAL max_prepared_stmt_count = " + (Integer.parseInt(held) + 50));
            int ok = 0, failed = 0;
            Object first = null;
            try {
                for (int i = 0; i < 200; i++) {
                    try (PreparedStatement ps = lc.prepareStatement("SELECT ? + " + i + " AS v")) {
                        ps.setInt(1, 1);
                        try (ResultSet rs = ps.executeQuery()) {
                            if (rs.next() && rs.getLong(1) == 1 + i) ok++;
                        }
                    } catch (SQLException e) {
                        failed++;
                        if (first == null) { Map<String, Object> f = err(e); f.put("at", i); first = f; }
                    }
                }
            } finally {
                exec(lc, "SET GLOBAL max_prepared_stmt_count = " + Integer.parseInt(old));
            }
            r.put("limit_loop", m("ok", ok, "failed", failed, "first_error", first));
            check(fails, ok == 200, "prepare/close loop: " + ok + " of 200");
            exec(c, "DROP TABLE " + t);
        });

        S.put("compression", (r, fails) -> {
            String t = P + "_comp";
            Connection c = connect("useCompression=true");
            r.put("status", q(c, "SHOW SESSION STATUS LIKE 'Compression'"));
            r.put("select1", q(c, "SELECT 1 AS one"));
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT REPEAT('abcdefghij', 104858) AS v")) {
                rs.next();
                byte[] big = rs.getBytes(1);
                r.put("big_result", m("length", big.length, "md5", md5(big)));
                check(fails, big.length == 1048580, "1 MB result");
            }
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v MEDIUMTEXT)");
            String p = payload(1 << 20);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " VALUES (1, ?)")) {
                ps.setString(1, p);
                r.put("big_insert", ps.executeUpdate());
            }
            r.put("server_side", q(c, "SELECT LENGTH(v) AS len, MD5(v) AS md5 FROM " + t));
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT v FROM " + t)) {
                rs.next();
                String back = rs.getString(1);
                r.put("read_back", m("length", back.length(), "md5", md5(back.getBytes(StandardCharsets.UTF_8)), "equal", back.equals(p)));
                check(fails, back.equals(p), "1 MB read back");
            }
            exec(c, "DROP TABLE " + t);
        });

        S.put("batch", (r, fails) -> {
            String t = P + "_batch";
            Connection c = connect("useBulkStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v VARCHAR(20))");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (id, v) VALUES (?, ?)")) {
                for (int i = 1; i <= 50; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "v" + i);
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                r.put("bulk_counts", counts);
                r.put("bulk_update_count", ps.getUpdateCount());
            }
            Object dup = attempt(() -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (id, v) VALUES (?, ?)")) {
                    int[][] rows = {{51}, {52}, {10}};
                    for (int[] x : rows) {
                        ps.setInt(1, x[0]);
                        ps.setString(2, "d");
                        ps.addBatch();
                    }
                    try {
                        return m("counts", ps.executeBatch());
                    } catch (BatchUpdateException e) {
                        Map<String, Object> o = err(e);
                        o.put("counts", e.getUpdateCounts());
                        return m("error", o);
                    }
                }
            });
            r.put("bulk_duplicate", dup);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (id, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)")) {
                Object[][] rows = {{1, "one"}, {2, "v2"}, {60, "new"}};
                for (Object[] x : rows) {
                    ps.setInt(1, (Integer) x[0]);
                    ps.setString(2, (String) x[1]);
                    ps.addBatch();
                }
                r.put("upsert_counts", ps.executeBatch());
            }
            try (Statement st = c.createStatement()) {
                st.addBatch("INSERT INTO " + t + " VALUES (70, 'p')");
                st.addBatch("INSERT INTO " + t + " VALUES (71, 'q'), (72, 'r')");
                st.addBatch("UPDATE " + t + " SET v = 'u' WHERE id IN (3, 4)");
                r.put("statement_batch", st.executeBatch());
            }
            List<Object> count = q(c, "SELECT COUNT(*) AS n, SUM(id) AS s FROM " + t);
            r.put("count", count);
            check(fails, "54".equals(s(count.get(0), "n")), "count " + s(count.get(0), "n"));
            exec(c, "DROP TABLE " + t);
        });

        S.put("large_packet", (r, fails) -> {
            String t = P + "_big";
            Connection admin = connect();
            String old = s(q(admin, "SELECT @@GLOBAL.max_allowed_packet AS v").get(0), "v");
            exec(admin, "SET GLOBAL max_allowed_packet = 67108864");
            try {
                Connection c = connect();
                r.put("session", q(c, "SELECT @@max_allowed_packet AS map, @@SESSION.max_allowed_packet AS smap"));
                exec(c, "DROP TABLE IF EXISTS " + t);
                exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, b LONGBLOB)");
                String p = payload(20 << 20);
                byte[] pb = p.getBytes(StandardCharsets.UTF_8);
                r.put("insert_text", attempt(() -> exec(c, "INSERT INTO " + t + " VALUES (1, '" + p + "')")));
                r.put("insert_prepared", attempt(() -> {
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " VALUES (2, ?)")) {
                        ps.setBytes(1, pb);
                        return ps.executeUpdate();
                    }
                }));
                r.put("server_side", attempt(() -> q(c, "SELECT id, LENGTH(b) AS len, MD5(b) AS md5 FROM " + t + " ORDER BY id")));
                Object back = attempt(() -> {
                    List<Object> out = new ArrayList<>();
                    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT id, b FROM " + t + " ORDER BY id")) {
                        while (rs.next()) {
                            byte[] b = rs.getBytes(2);
                            out.add(m("id", rs.getInt(1), "length", b.length, "md5", md5(b), "equal", Arrays.equals(b, pb)));
                        }
                    }
                    return out;
                });
                r.put("read_back", back);
                boolean ok = back instanceof List && ((List<?>) back).size() == 2;
                if (ok) for (Object x : (List<?>) back) ok &= Boolean.TRUE.equals(((Map<?, ?>) x).get("equal"));
                check(fails, ok, "20 MB rows read back");
                attempt(() -> exec(c, "DROP TABLE " + t));
            } finally {
                exec(admin, "SET GLOBAL max_allowed_packet = " + Long.parseLong(old));
            }
        });

        S.put("globals", (r, fails) -> {
            String t = P + "_glob";
            Connection admin = connect();
            Object old = q(admin, "SELECT @@GLOBAL.sql_mode AS mode, @@GLOBAL.net_buffer_length AS nbl").get(0);
            r.put("old", old);
            exec(admin, "SET GLOBAL sql_mode = ''");
            exec(admin, "SET GLOBAL net_buffer_length = 32768");
            try {
                Connection c = connect();
                List<Object> sess = q(c, "SELECT @@SESSION.sql_mode AS mode, @@GLOBAL.sql_mode AS gmode, @@SESSION.net_buffer_length AS nbl");
                r.put("session", sess);
                exec(c, "DROP TABLE IF EXISTS " + t);
                exec(c, "CREATE TABLE " + t + " (v VARCHAR(3))");
                r.put("long_insert", attempt(() -> exec(c, "INSERT INTO " + t + " VALUES ('abcdef')")));
                r.put("warnings", q(c, "SHOW WARNINGS"));
                r.put("stored", q(c, "SELECT v FROM " + t));
                // Connector/J appends STRICT_TRANS_TABLES itself (jdbcCompliantTruncation).
                check(fails, !s(sess.get(0), "mode").contains("NO_ENGINE_SUBSTITUTION"), "new session sql_mode " + s(sess.get(0), "mode"));
                exec(c, "DROP TABLE " + t);
            } finally {
                exec(admin, "SET GLOBAL sql_mode = '" + s(old, "mode") + "'");
                exec(admin, "SET GLOBAL net_buffer_length = " + Long.parseLong(s(old, "nbl")));
            }
            Connection c2 = connect();
            List<Object> after = q(c2, "SELECT @@SESSION.sql_mode AS mode, @@SESSION.net_buffer_length AS nbl");
            r.put("after_restore", after);
            check(fails, s(after.get(0), "mode").contains("STRICT_TRANS_TABLES"), "sql_mode after restore");
        });

        S.put("change_user", (r, fails) -> {
            throw new Skip("Connector/J has no change-user API");
        });

        S.put("autocommit0", (r, fails) -> {
            String t = P + "_ac";
            Connection admin = connect();
            exec(admin, "DROP TABLE IF EXISTS " + t);
            exec(admin, "CREATE TABLE " + t + " (id INT PRIMARY KEY)");
            List<Connection> cs = new ArrayList<>();
            List<Map<String, Object>> sessions = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                Map<String, Object> s = new LinkedHashMap<>();
                Connection c;
                try {
                    c = connect();
                    s.put("connect", "ok");
                } catch (SQLException e) {
                    s.put("connect", m("errno", e.getErrorCode(), "message", e.getMessage()));
                    c = null;
                }
                cs.add(c);
                if (c != null) {
                    final Connection cc = c;
                    s.put("autocommit", step(() -> { cc.setAutoCommit(false); return null; }));
                    s.put("select", step(() -> q(cc, "SELECT COUNT(*) AS n, @@autocommit AS ac FROM " + t)));
                    // The SELECT opened a transaction: ended, the session idles without a backend.
                    s.put("commit0", step(() -> { cc.commit(); return null; }));
                }
                sessions.add(s);
            }
            Thread.sleep(2000);
            for (int i = 0; i < cs.size(); i++) {
                Connection c = cs.get(i);
                if (c == null) continue;
                final int id = i;
                sessions.get(i).put("insert", step(() -> { exec(c, "INSERT INTO " + t + " VALUES (" + id + ")"); return null; }));
                sessions.get(i).put("commit", step(() -> { c.commit(); return null; }));
            }
            r.put("sessions", sessions);
            // Count once the sessions are gone (through the proxy their
            // backends would still be pinned).
            for (Connection c : cs) if (c != null) try { c.close(); } catch (SQLException e) { /* gone */ }
            Thread.sleep(500);
            List<Object> count = q(admin, "SELECT COUNT(*) AS n FROM " + t);
            r.put("count", count);
            check(fails, "12".equals(s(count.get(0), "n")), "committed rows " + s(count.get(0), "n"));
            exec(admin, "DROP TABLE " + t);
        });

        S.put("cursor_call", (r, fails) -> {
            String t = P + "_cc", p = P + "_proc";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "DROP PROCEDURE IF EXISTS " + p);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v VARCHAR(10))");
            exec(c, "INSERT INTO " + t + " VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')");
            exec(c, "CREATE PROCEDURE " + p + "(IN n INT)\nBEGIN\n  DECLARE done INT DEFAULT 0;\n  DECLARE x INT;\n  DECLARE total INT DEFAULT 0;\n"
                + "  DECLARE cur CURSOR FOR SELECT id FROM " + t + " WHERE id <= n ORDER BY id;\n"
                + "  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;\n  OPEN cur;\n  rd: LOOP\n    FETCH cur INTO x;\n"
                + "    IF done THEN LEAVE rd; END IF;\n    SET total = total + x;\n  END LOOP;\n  CLOSE cur;\n  SELECT total;\n"
                + "  SELECT id, v FROM " + t + " WHERE id <= n ORDER BY id;\n  SELECT n AS n, 'done' AS status;\nEND");
            Object text = attempt(() -> {
                try (Statement st = c.createStatement()) { return allSets(st, st.execute("CALL " + p + "(3)")); }
            });
            r.put("text", text);
            r.put("after_text", attempt(() -> q(c, "SELECT 1 AS one")));
            Object prepared = attempt(() -> {
                try (PreparedStatement ps = c.prepareStatement("CALL " + p + "(?)")) {
                    ps.setInt(1, 4);
                    return allSets(ps, ps.execute());
                }
            });
            r.put("prepared", prepared);
            r.put("after_prepared", attempt(() -> q(c, "SELECT 2 AS two")));
            Object callable = attempt(() -> {
                try (CallableStatement cs = c.prepareCall("{call " + p + "(?)}")) {
                    cs.setInt(1, 2);
                    return allSets(cs, cs.execute());
                }
            });
            r.put("callable", callable);
            r.put("after_callable", attempt(() -> q(c, "SELECT 3 AS three")));
            check(fails, text instanceof List && ((List<?>) text).size() == 4, "text CALL: 3 result sets + OK");
            check(fails, prepared instanceof List && ((List<?>) prepared).size() == 4, "prepared CALL: 3 result sets + OK");
            Connection d = connect();
            exec(d, "DROP PROCEDURE " + p);
            exec(d, "DROP TABLE " + t);
        });

        S.put("found_rows", (r, fails) -> {
            String t = P + "_fr";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t + ", " + t + "2");
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY)");
            exec(c, "CREATE TABLE " + t + "2 (id INT PRIMARY KEY)");
            exec(c, "INSERT INTO " + t + " VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)");
            String fr = "SELECT FOUND_ROWS() AS fr";
            r.put("limit", q(c, "SELECT id FROM " + t + " ORDER BY id LIMIT 2, 1"));
            r.put("limit_fr", q(c, fr));
            r.put("calc", q(c, "SELECT SQL_CALC_FOUND_ROWS id FROM " + t + " ORDER BY id LIMIT 2, 1"));
            List<Object> calcFr = q(c, fr);
            r.put("calc_fr", calcFr);
            check(fails, "10".equals(s(calcFr.get(0), "fr")), "SQL_CALC_FOUND_ROWS " + s(calcFr.get(0), "fr"));
            r.put("insert_select", exec(c, "INSERT INTO " + t + "2 SELECT id FROM " + t + " WHERE 1 = 0"));
            r.put("insert_select_fr", q(c, fr));
            r.put("update", exec(c, "UPDATE " + t + " SET id = id WHERE id < 3"));
            r.put("update_row_count", q(c, "SELECT ROW_COUNT() AS rc"));
            try (PreparedStatement ps = c.prepareStatement("SELECT SQL_CALC_FOUND_ROWS id FROM " + t + " ORDER BY id LIMIT ?, 1")) {
                ps.setInt(1, 4);
                try (ResultSet rs = ps.executeQuery()) { r.put("ps_calc", rows(rs)); }
            }
            try (PreparedStatement ps = c.prepareStatement(fr)) {
                try (ResultSet rs = ps.executeQuery()) { r.put("ps_calc_fr", rows(rs)); }
                q(c, "SELECT SQL_CALC_FOUND_ROWS id FROM " + t + " WHERE id > 3 LIMIT 1");
                try (ResultSet rs = ps.executeQuery()) { r.put("text_calc_then_ps_fr", rows(rs)); }
            }
            exec(c, "DROP TABLE " + t + ", " + t + "2");
        });

        S.put("kill_expr", (r, fails) -> {
            Connection c = connect("useServerPrepStmts=true");
            List<Object> text = new ArrayList<>();
            for (String sql : new String[] {"KILL QUERY (SELECT CONNECTION_ID() + 1000000)", "KILL (SELECT CONNECTION_ID() + 1000000)",
                    "KILL QUERY CONNECTION_ID() + 1000000", "KILL CONNECTION CONNECTION_ID() + 1000000", "KILL 987654321"}) {
                Object e = attempt(() -> exec(c, sql));
                text.add(m("sql", sql, "result", e, "alive", attempt(() -> q(c, "SELECT 1 AS one"))));
                Object errno = e instanceof Map && ((Map<?, ?>) e).get("error") != null ? ((Map<?, ?>) ((Map<?, ?>) e).get("error")).get("errno") : null;
                check(fails, Integer.valueOf(1094).equals(errno), sql + ": want 1094, got " + json(e));
            }
            r.put("text", text);
            List<Object> prepared = new ArrayList<>();
            Object[][] ps = {{"KILL ?", 987654321}, {"KILL QUERY ?", 987654321}, {"KILL QUERY (SELECT ? + CONNECTION_ID())", 1000000}};
            for (Object[] x : ps) {
                Object e = attempt(() -> {
                    try (PreparedStatement st = c.prepareStatement((String) x[0])) {
                        st.setInt(1, (Integer) x[1]);
                        st.execute();
                        return "ok";
                    }
                });
                prepared.add(m("sql", x[0], "result", e, "alive", attempt(() -> q(c, "SELECT 1 AS one"))));
            }
            r.put("prepared", prepared);
        });

        S.put("metadata", (r, fails) -> {
            String t = P + "_md";
            Connection c = connect("useServerPrepStmts=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1, js JSON, bl BLOB, de DECIMAL(8,3))");
            exec(c, "INSERT INTO " + t + " VALUES (1, 'äb', 'é', '{\"k\": [1, 2]}', X'0102', 12.5)");
            String sel = "SELECT 1 AS i, 1.5 AS d, 'abc' AS s, _utf8mb4'é' AS u, CONCAT('a', 1) AS c, UPPER(s) AS us, LENGTH(l) AS ll, l, js, JSON_OBJECT('k', 1) AS jo, bl, de, NULL AS n, id FROM " + t;
            for (String cs : new String[] {"utf8mb4", "latin1"}) {
                if (!cs.equals("utf8mb4")) exec(c, "SET NAMES " + cs);
                Map<String, Object> o = new LinkedHashMap<>();
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sel)) { o.put("text", rowsMeta(rs)); }
                try (PreparedStatement ps = c.prepareStatement(sel + " WHERE id = ?")) {
                    o.put("prepare_meta", meta_of(ps.getMetaData()));
                    ps.setInt(1, 1);
                    try (ResultSet rs = ps.executeQuery()) { o.put("binary", rowsMeta(rs)); }
                }
                r.put(cs, o);
            }
            @SuppressWarnings("unchecked")
            List<Object> rows = (List<Object>) ((Map<String, Object>) ((Map<String, Object>) r.get("utf8mb4")).get("text")).get("rows");
            check(fails, "ÄB".equals(s(rows.get(0), "us")), "UPPER(äb) " + s(rows.get(0), "us"));
            exec(c, "DROP TABLE " + t);
        });

        S.put("greeting_charset", (r, fails) -> {
            Connection c = connect();
            r.put("vars", q(c, "SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll, @@character_set_server AS server"));
            r.put("roundtrip", q(c, "SELECT 'é😀' AS s, HEX('é😀') AS h"));
            r.put("driver", m("version", c.getMetaData().getDriverVersion()));
        });

        S.put("multi", (r, fails) -> {
            String t = P + "_multi";
            Connection c = connect("allowMultiQueries=true");
            exec(c, "DROP TABLE IF EXISTS " + t);
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, v INT)");
            try (Statement st = c.createStatement()) {
                boolean isRs = st.execute("SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; INSERT INTO " + t + " VALUES (1, 1), (2, 2); UPDATE " + t
                    + " SET v = v + 1 WHERE id > 0; SELECT CAST('abc' AS SIGNED) AS w; SHOW WARNINGS");
                List<Object> sets = allSets(st, isRs);
                r.put("sets", sets);
                check(fails, sets.size() == 6, "six results: " + sets.size());
            }
            r.put("error_midway", attempt(() -> {
                try (Statement st = c.createStatement()) { return allSets(st, st.execute("SELECT 1 AS a; SELECT * FROM " + t + "_nosuch; SELECT 2 AS b")); }
            }));
            r.put("after_error", attempt(() -> q(c, "SELECT 3 AS three")));
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT CAST('abc' AS SIGNED) AS w")) {
                r.put("warning_select", rows(rs));
                r.put("warning_select_warnings", warnings(st.getWarnings()));
            }
            r.put("show_warnings", q(c, "SHOW WARNINGS"));
            r.put("warning_count", q(c, "SELECT @@warning_count AS wc"));
            r.put("insert_ignore", exec(c, "INSERT IGNORE INTO " + t + " VALUES (1, 5)"));
            r.put("insert_ignore_warnings", q(c, "SHOW WARNINGS"));
            r.put("count_warnings", q(c, "SHOW COUNT(*) WARNINGS"));
            exec(c, "DROP TABLE " + t);
        });
    }

    static List<Object> meta_of(ResultSetMetaData md) throws SQLException {
        List<Object> out = new ArrayList<>();
        if (md == null) return out;
        for (int i = 1; i <= md.getColumnCount(); i++) {
            out.add(m("label", md.getColumnLabel(i), "typeName", md.getColumnTypeName(i), "className", md.getColumnClassName(i),
                "precision", md.getPrecision(i), "scale", md.getScale(i)));
        }
        return out;
    }

    static Object step(Body f) {
        try {
            Object v = f.get();
            return v == null ? "ok" : v;
        } catch (SQLException e) {
            return m("errno", e.getErrorCode(), "message", e.getMessage());
        } catch (Exception e) {
            return m("errno", null, "message", e.toString());
        }
    }

    public static void main(String[] args) throws Exception {
        String want = E.getOrDefault("DRV_SCENARIOS", String.join(",", S.keySet()));
        for (String name : want.split(",")) {
            if (name.isEmpty()) continue;
            emit(m("event", "start", "scenario", name));
            Scenario sc = S.get(name);
            if (sc == null) {
                emit(m("scenario", name, "ok", false, "result", null, "error", "unknown scenario"));
                continue;
            }
            Map<String, Object> r = new LinkedHashMap<>();
            List<String> fails = new ArrayList<>();
            String error = "";
            String skip = null;
            long t0 = System.nanoTime();
            Future<?> fut = pool.submit(() -> { sc.run(r, fails); return null; });
            try {
                fut.get(3L * TMO, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                fut.cancel(true);
                error = "scenario timed out after " + (3 * TMO) + " s";
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof Skip) skip = c.getMessage();
                else error = c.getClass().getSimpleName() + ": " + c.getMessage();
            }
            closeAll();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            Map<String, Object> out;
            synchronized (r) {
                if (skip != null) {
                    out = m("scenario", name, "ok", true, "skip", skip, "result", null, "elapsed_ms", ms);
                } else {
                    List<String> all = new ArrayList<>();
                    if (!error.isEmpty()) all.add(error);
                    all.addAll(fails);
                    out = m("scenario", name, "ok", all.isEmpty(), "result", new LinkedHashMap<>(r), "error", String.join("; ", all), "elapsed_ms", ms);
                }
            }
            emit(out);
        }
        System.exit(0);
    }
}
