// The driver matrix for Node's mysql2: every scenario on its own
// connection(s), one JSON line per scenario (see ../README.md).
// Environment: DRV_HOST DRV_PORT DRV_USER DRV_PASSWORD DRV_DB DRV_MODE
// DRV_PREFIX (table prefix) DRV_USER2 DRV_PASSWORD2 DRV_DB2 DRV_SCENARIOS
// (comma list, default all) DRV_TIMEOUT (seconds per statement).
'use strict';

const path = require('path');
const crypto = require('crypto');
const mysql = require(path.join(__dirname, 'node_modules', 'mysql2', 'promise'));
const { Types } = require(path.join(__dirname, 'node_modules', 'mysql2'));

const E = process.env;
const P = E.DRV_PREFIX || 'node_x';
const TMO = (Number(E.DRV_TIMEOUT) || 10) * 1000;
const base = {
  host: E.DRV_HOST || '127.0.0.1',
  port: Number(E.DRV_PORT || 3306),
  user: E.DRV_USER || 'app',
  password: E.DRV_PASSWORD || '',
  database: E.DRV_DB || 'test',
  connectTimeout: TMO,
};
const typeNames = Object.fromEntries(Object.entries(Types).map(([k, v]) => [v, k]));

const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');

// Connections a scenario opened, closed after it.
let opened = [];
async function connect(extra = {}) {
  const c = await mysql.createConnection({ ...base, ...extra });
  opened.push(c);
  return c;
}
async function closeAll() {
  const cs = opened;
  opened = [];
  await Promise.all(cs.map(async (c) => {
    if (c.__dead) {
      c.destroy();
      return;
    }
    try {
      await Promise.race([c.end(), sleep(3000).then(() => { throw new Error('end timed out'); })]);
    } catch (e) {
      c.destroy();
    }
  }));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// q and x run a text query and a prepared statement with the per-statement
// timeout; after a timeout the connection is not used again (mysql2 would
// wait on it forever).
async function guard(c, f) {
  if (c.__dead) throw Object.assign(new Error('not run: the connection timed out earlier'), { code: 'NOT_RUN' });
  try {
    return await f();
  } catch (e) {
    if (e.code === 'PROTOCOL_SEQUENCE_TIMEOUT') c.__dead = true;
    throw e;
  }
}
const q = (c, sql, values) => guard(c, () => c.query({ sql, timeout: TMO }, values));
const x = (c, sql, values) => guard(c, () => c.execute({ sql, timeout: TMO }, values));

function errInfo(e) {
  return {
    errno: e.errno === undefined ? null : e.errno,
    sqlState: e.sqlState === undefined ? null : e.sqlState,
    code: e.code === undefined ? null : e.code,
    message: e.sqlMessage || e.message,
  };
}
// attempt runs f and returns its value, or {error} when it throws.
async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: errInfo(e) };
  }
}

// val is a value as the driver returned it: [type, text].
function val(v) {
  if (v === null || v === undefined) return ['null', null];
  if (Buffer.isBuffer(v)) return ['Buffer', v.toString('hex')];
  if (v instanceof Date) return ['Date', isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString()];
  switch (typeof v) {
    case 'number': case 'bigint': case 'boolean': return [typeof v, String(v)];
    case 'string': return ['string', v];
    default: return [(v.constructor && v.constructor.name) || typeof v, JSON.stringify(v)];
  }
}
const row = (r) => (Array.isArray(r) ? r.map(val) : Object.fromEntries(Object.entries(r).map(([k, v]) => [k, val(v)])));
const field = (f) => ({
  name: f.name, orgName: f.orgName, table: f.table, orgTable: f.orgTable, db: f.schema,
  type: typeNames[f.columnType] || f.columnType, characterSet: f.characterSet, encoding: f.encoding,
  columnLength: f.columnLength, flags: f.flags, decimals: f.decimals,
});
function header(h) {
  return {
    affectedRows: h.affectedRows, insertId: h.insertId, warningStatus: h.warningStatus,
    info: h.info, changedRows: h.changedRows, serverStatus: h.serverStatus,
  };
}
// res turns a query's [rows, fields] into something comparable; multiple
// result sets come as arrays.
function res([rows, fields]) {
  if (Array.isArray(fields) && fields.some((f) => f === undefined || Array.isArray(f))) {
    return rows.map((r, i) => (Array.isArray(r) ? { rows: r.map(row), fields: (fields[i] || []).map(field) } : header(r)));
  }
  if (Array.isArray(rows)) return { rows: rows.map(row), fields: (fields || []).map(field) };
  return header(rows);
}
const rowsOf = ([rows]) => rows.map(row);

// payload is a deterministic n-byte string of [a-z0-9]: a 64 KiB LCG block
// repeated.
function payload(n) {
  const abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
  let s = 12345;
  const blk = [];
  for (let i = 0; i < 65536; i++) {
    s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
    blk.push(abc[(s >>> 16) % 36]);
  }
  const block = blk.join('');
  return block.repeat(Math.ceil(n / 65536)).slice(0, n);
}
const md5 = (b) => crypto.createHash('md5').update(b).digest('hex');

const CYR = 'Привет';
const LAT = 'café é';
const EMO = 'emoji 😀 ok';
const hex = (s) => Buffer.from(s, 'utf8').toString('hex').toUpperCase();

const TYPES_DDL = (t) => `CREATE TABLE ${t} (id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, de DECIMAL(20,6), f FLOAT, d DOUBLE, b BIT(10),
  dt DATE, tm TIME(6), tmn TIME, dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, y YEAR,
  c CHAR(10), vc VARCHAR(100), bn BINARY(4), vb VARBINARY(10), tx TEXT, bl BLOB,
  en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY NULL) DEFAULT CHARSET=utf8mb4`;
const TYPES_ROW = (t) => `INSERT INTO ${t} VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215,
  -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, -12345678901234.123456, 1.5, 2.25, b'1010101010',
  '2024-02-29', '12:34:56.789012', '-838:59:59', '2024-02-29 23:59:58.123456', '2024-03-01 00:00:01', 2024,
  'ch', 'vär', X'00FF1000', X'DEADBEEF', 'text ü', X'00010203',
  'b', 'x,z', '{"a": 1, "b": [true, null]}', ST_GeomFromText('POINT(1 2)'))`;

const S = {};

S.types = async (r, check) => {
  const c = await connect({ charset: 'UTF8MB4_GENERAL_CI' });
  const t = `${P}_types`;
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, TYPES_DDL(t));
  await q(c, TYPES_ROW(t));
  await q(c, `INSERT INTO ${t} (id) VALUES (2)`);
  const text = await q(c, `SELECT * FROM ${t} ORDER BY id`);
  r.text = res(text);
  const bin = await x(c, `SELECT * FROM ${t} WHERE id >= ? ORDER BY id`, [0]);
  r.binary = res(bin);
  for (const [name, set] of [['text', text[0]], ['binary', bin[0]]]) {
    const a = set[0];
    check(a.ti === -128 && a.tiu === 255 && a.iu === 4294967295, `${name}: integers ${a.ti} ${a.tiu} ${a.iu}`);
    check(a.vc === 'vär' && a.tx === 'text ü' && a.en === 'b' && a.st === 'x,z', `${name}: strings`);
    check(String(a.de) === '-12345678901234.123456', `${name}: decimal ${a.de}`);
    check(Buffer.isBuffer(a.bn) && a.bn.toString('hex') === '00ff1000', `${name}: binary`);
    check(Object.entries(set[1]).every(([k, v]) => k === 'id' || v === null), `${name}: NULL row`);
  }
  await q(c, `DROP TABLE ${t}`);
};

S.charset = async (r, check) => {
  const t = `${P}_cs`;
  const c = await connect({ charset: 'UTF8MB4_GENERAL_CI' });
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, k VARCHAR(50) CHARACTER SET koi8r, l VARCHAR(50) CHARACTER SET latin1, u VARCHAR(50) CHARACTER SET utf8mb4)`);
  await q(c, `INSERT INTO ${t} VALUES (1, _utf8mb4 X'${hex(CYR)}', _utf8mb4 X'${hex(LAT)}', _utf8mb4 X'${hex(EMO)}')`);
  const sel = `SELECT k, l, u, HEX(k) AS hk, HEX(l) AS hl, HEX(u) AS hu, 'é' AS lit, HEX('é') AS hlit FROM ${t} WHERE id = 1`;
  const vars = 'SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll';
  r.set_names = {};
  for (const cs of ['koi8r', 'latin1', 'utf8mb4']) {
    await q(c, `SET NAMES ${cs}`);
    const o = {};
    o.vars = rowsOf(await q(c, vars));
    o.text = rowsOf(await q(c, sel));
    o.binary = rowsOf(await x(c, sel.replace('id = 1', 'id = ?'), [1]));
    r.set_names[cs] = o;
    const hk = (await q(c, sel))[0][0].hk;
    check(hk === 'F0D2C9D7C5D4', `SET NAMES ${cs}: koi8r column bytes ${hk}`);
  }
  // The driver's charset option at connect.
  r.connect_option = {};
  const opts = { koi8r: ['KOI8R_GENERAL_CI', 'k', CYR], latin1: ['LATIN1_SWEDISH_CI', 'l', LAT], utf8mb4: ['UTF8MB4_GENERAL_CI', 'u', EMO] };
  let id = 10;
  for (const [cs, [opt, col, text]] of Object.entries(opts)) {
    const cc = await connect({ charset: opt });
    const o = { driver_charset_number: cc.connection.config.charsetNumber, driver_encoding: cc.connection.clientEncoding };
    o.vars = rowsOf(await q(cc, vars));
    id++;
    o.insert = header((await q(cc, `INSERT INTO ${t} (id, ${col}) VALUES (?, ?)`, [id, text]))[0]);
    const [[got]] = await q(cc, `SELECT ${col} AS v, HEX(${col}) AS h FROM ${t} WHERE id = ?`, [id]);
    o.read_back = row(got);
    check(got.v === text, `connect charset ${cs}: read back ${JSON.stringify(got.v)}`);
    o.row1 = rowsOf(await q(cc, sel));
    r.connect_option[cs] = o;
  }
  await q(c, `DROP TABLE ${t}`);
};

S.prepared = async (r, check) => {
  const t = `${P}_ps`;
  const c = await connect({ charset: 'UTF8MB4_GENERAL_CI' });
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT AUTO_INCREMENT PRIMARY KEY, i BIGINT NULL, d DOUBLE NULL, de DECIMAL(10,2) NULL,
    s VARCHAR(50) NULL, b VARBINARY(50) NULL, dt DATETIME(3) NULL, n INT NULL)`);
  const insSQL = `INSERT INTO ${t} (i, d, de, s, b, dt, n) VALUES (?, ?, ?, ?, ?, ?, ?)`;
  const ins = await c.prepare(insSQL);
  r.insert_params = ins.statement ? ins.statement.parameters.length : null;
  const params = [
    [1, 1.5, '12.34', 'one', Buffer.from([0, 1, 2]), '2024-01-02 03:04:05.678', null],
    [-1099511627776, -0.25, '-0.01', 'ünï', Buffer.alloc(0), '1999-12-31 23:59:59.999', 7],
    [null, null, null, null, null, null, null],
    [9007199254740991, 1e300, '99999999.99', '', Buffer.from('bin'), '2000-01-01 00:00:00', -1],
    [42, 3.25, '0', 'five', Buffer.from([255]), null, 0],
  ];
  r.inserts = [];
  for (const p of params) {
    const [h] = await ins.execute(p);
    r.inserts.push(header(h));
  }
  check(r.inserts.every((h) => h.affectedRows === 1), 'inserts affected 1 each');
  const selSQL = `SELECT id, i, d, de, s, b, dt, n, ? AS p, ? IS NULL AS pn FROM ${t} WHERE id = ?`;
  const sel = await c.prepare(selSQL);
  const ps = ['x', 42, null, 1.5, Buffer.from([1, 2])];
  r.selects = [];
  for (let i = 0; i < 5; i++) {
    const [rows] = await sel.execute([ps[i], ps[i], i + 1]);
    r.selects.push(rows.map(row));
  }
  check(r.selects[2][0] && r.selects[2][0].pn[1] === '1', 'NULL parameter IS NULL');
  c.unprepare(insSQL);
  c.unprepare(selSQL);
  // A statement closed on the server: its handle no longer executes.
  r.closed_execute = await attempt(async () => rowsOf(await sel.execute(['x', 'x', 1])));
  // Prepared again after the close.
  r.reprepared = rowsOf(await x(c, selSQL, ['y', null, 2]));
  c.unprepare(selSQL);

  // 200 prepare/close cycles with room for only 50 more statements on the
  // server (other connections, such as idle proxies' pools, hold some).
  const [[{ old }]] = await q(c, 'SELECT @@GLOBAL.max_prepared_stmt_count AS old');
  const [[{ Value: held }]] = await q(c, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'");
  await q(c, `SET GLOBAL max_prepared_stmt_count = ${Number(held) + 50}`);
  let ok = 0;
  let firstErr = null;
  let failed = 0;
  try {
    for (let i = 0; i < 200; i++) {
      const sql = `SELECT ? + ${i} AS v`;
      try {
        const st = await c.prepare(sql);
        const [rows] = await st.execute([1]);
        if (rows[0].v === 1 + i) ok++;
        c.unprepare(sql);
      } catch (e) {
        failed++;
        if (!firstErr) firstErr = { at: i, ...errInfo(e) };
      }
    }
  } finally {
    await q(c, `SET GLOBAL max_prepared_stmt_count = ${Number(old)}`);
  }
  r.limit_loop = { ok, failed, first_error: firstErr };
  check(ok === 200, `prepare/close loop: ${ok} of 200`);
  await q(c, `DROP TABLE ${t}`);
};

S.compression = async (r, check) => {
  const t = `${P}_comp`;
  const c = await connect({ compress: true, charset: 'UTF8MB4_GENERAL_CI' });
  r.driver_compress = !!c.connection.config.compress;
  r.status = rowsOf(await q(c, "SHOW SESSION STATUS LIKE 'Compression'"));
  r.select1 = rowsOf(await q(c, 'SELECT 1 AS one'));
  const [[big]] = await q(c, "SELECT REPEAT('abcdefghij', 104858) AS v");
  r.big_result = { length: big.v.length, md5: md5(big.v) };
  check(big.v.length === 1048580, `1 MB result length ${big.v.length}`);
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, v MEDIUMTEXT)`);
  const p = payload(1 << 20);
  r.big_insert = header((await q(c, `INSERT INTO ${t} VALUES (1, ?)`, [p]))[0]);
  r.server_side = rowsOf(await q(c, `SELECT LENGTH(v) AS len, MD5(v) AS md5 FROM ${t}`));
  const [[back]] = await q(c, `SELECT v FROM ${t} WHERE id = 1`);
  r.read_back = { length: back.v.length, md5: md5(back.v), equal: back.v === p };
  check(back.v === p, '1 MB insert read back');
  r.prepared_back = rowsOf(await x(c, `SELECT LENGTH(v) AS len FROM ${t} WHERE id = ?`, [1]));
  await q(c, `DROP TABLE ${t}`);
};

S.batch = async (r, check) => {
  const t = `${P}_batch`;
  const c = await connect();
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, v VARCHAR(20))`);
  const rows = [];
  for (let i = 1; i <= 50; i++) rows.push([i, `v${i}`]);
  r.bulk = header((await q(c, `INSERT INTO ${t} (id, v) VALUES ?`, [rows]))[0]);
  check(r.bulk.affectedRows === 50, `bulk affected ${r.bulk.affectedRows}`);
  const dup = [[51, 'a'], [52, 'b'], [10, 'dup']];
  r.bulk_duplicate = await attempt(async () => header((await q(c, `INSERT INTO ${t} (id, v) VALUES ?`, [dup]))[0]));
  r.upsert = header((await q(c, `INSERT INTO ${t} (id, v) VALUES ? ON DUPLICATE KEY UPDATE v = VALUES(v)`, [[[1, 'one'], [2, 'v2'], [60, 'new']]]))[0]);
  r.prepared_multirow = header((await x(c, `INSERT INTO ${t} (id, v) VALUES (?, ?), (?, ?), (?, ?)`, [70, 'p', 71, 'q', 72, 'r']))[0]);
  r.count = rowsOf(await q(c, `SELECT COUNT(*) AS n, SUM(id) AS s FROM ${t}`));
  check(Number(r.count[0].n[1]) === 54, `count ${r.count[0].n[1]}`);
  await q(c, `DROP TABLE ${t}`);
};

S.large_packet = async (r, check) => {
  const t = `${P}_big`;
  const admin = await connect();
  const [[{ old }]] = await q(admin, 'SELECT @@GLOBAL.max_allowed_packet AS old');
  await q(admin, 'SET GLOBAL max_allowed_packet = 67108864');
  try {
    const c = await connect();
    r.session = rowsOf(await q(c, 'SELECT @@max_allowed_packet AS map, @@SESSION.max_allowed_packet AS smap'));
    await q(c, `DROP TABLE IF EXISTS ${t}`);
    await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, b LONGBLOB)`);
    const p = payload(20 << 20);
    r.insert_text = await attempt(async () => header((await q(c, `INSERT INTO ${t} VALUES (1, '${p}')`))[0]));
    r.insert_prepared = await attempt(async () => header((await x(c, `INSERT INTO ${t} VALUES (2, ?)`, [Buffer.from(p)]))[0]));
    r.server_side = await attempt(async () => rowsOf(await q(c, `SELECT id, LENGTH(b) AS len, MD5(b) AS md5 FROM ${t} ORDER BY id`)));
    r.read_back = await attempt(async () => {
      const [rows] = await q(c, `SELECT id, b FROM ${t} ORDER BY id`);
      return rows.map((x) => ({ id: x.id, length: x.b.length, md5: md5(x.b), equal: x.b.toString() === p }));
    });
    r.read_back_prepared = await attempt(async () => {
      const [rows] = await x(c, `SELECT id, b FROM ${t} WHERE id >= ? ORDER BY id`, [0]);
      return rows.map((x) => ({ id: x.id, length: x.b.length, equal: x.b.toString() === p }));
    });
    check(Array.isArray(r.read_back) && r.read_back.length === 2 && r.read_back.every((x) => x.equal), '20 MB rows read back');
    await attempt(() => q(c, `DROP TABLE ${t}`));
  } finally {
    await q(admin, `SET GLOBAL max_allowed_packet = ${Number(old)}`);
  }
};

S.globals = async (r, check) => {
  const t = `${P}_glob`;
  const admin = await connect();
  const [[old]] = await q(admin, 'SELECT @@GLOBAL.sql_mode AS mode, @@GLOBAL.net_buffer_length AS nbl');
  r.old = row(old);
  await q(admin, "SET GLOBAL sql_mode = ''");
  await q(admin, 'SET GLOBAL net_buffer_length = 32768');
  try {
    const c = await connect();
    r.session = rowsOf(await q(c, 'SELECT @@SESSION.sql_mode AS mode, @@GLOBAL.sql_mode AS gmode, @@SESSION.net_buffer_length AS nbl'));
    await q(c, `DROP TABLE IF EXISTS ${t}`);
    await q(c, `CREATE TABLE ${t} (v VARCHAR(3))`);
    r.long_insert = await attempt(async () => header((await q(c, `INSERT INTO ${t} VALUES ('abcdef')`))[0]));
    r.warnings = rowsOf(await q(c, 'SHOW WARNINGS'));
    r.stored = rowsOf(await q(c, `SELECT v FROM ${t}`));
    check(!r.session[0].mode[1].includes('STRICT'), `new session sql_mode ${r.session[0].mode[1]}`);
    await q(c, `DROP TABLE ${t}`);
  } finally {
    await q(admin, 'SET GLOBAL sql_mode = ?', [old.mode]);
    await q(admin, `SET GLOBAL net_buffer_length = ${Number(old.nbl)}`);
  }
  const c2 = await connect();
  r.after_restore = rowsOf(await q(c2, 'SELECT @@SESSION.sql_mode AS mode, @@SESSION.net_buffer_length AS nbl'));
  check(r.after_restore[0].mode[1].includes('STRICT_TRANS_TABLES'), 'sql_mode after restore');
};

S.change_user = async (r, check) => {
  const c = await connect();
  await q(c, 'SET @v = 1');
  const who = "SELECT CURRENT_USER() AS cu, SUBSTRING_INDEX(USER(), '@', 1) AS u, DATABASE() AS db, @v AS v";
  r.before = rowsOf(await q(c, who));
  await c.changeUser({ user: E.DRV_USER2, password: E.DRV_PASSWORD2, database: E.DRV_DB2 });
  r.after = rowsOf(await q(c, who));
  check(r.after[0].u[1] === E.DRV_USER2 && r.after[0].db[1] === E.DRV_DB2 && r.after[0].v[1] === null, 'after changeUser');
  await c.changeUser({ user: base.user, password: base.password, database: base.database });
  r.back = rowsOf(await q(c, who));
  const bad = await connect();
  r.bad_password = await attempt(async () => { await bad.changeUser({ user: E.DRV_USER2, password: 'wrong' }); return 'accepted'; });
};

S.autocommit0 = async (r, check) => {
  const t = `${P}_ac`;
  const admin = await connect();
  await q(admin, `DROP TABLE IF EXISTS ${t}`);
  await q(admin, `CREATE TABLE ${t} (id INT PRIMARY KEY)`);
  const cs = [];
  for (let i = 0; i < 12; i++) cs.push(await connect());
  const step = async (c, sql) => {
    try {
      const [rows] = await q(c, sql);
      return Array.isArray(rows) ? rows.map(row) : 'ok';
    } catch (e) {
      const i = errInfo(e);
      return { errno: i.errno, message: i.message };
    }
  };
  r.sessions = [];
  for (const c of cs) {
    const s = {};
    s.set = await step(c, 'SET autocommit = 0');
    s.select = await step(c, `SELECT COUNT(*) AS n, @@autocommit AS ac FROM ${t}`);
    // The SELECT opened a transaction (InnoDB, autocommit=0): an app that
    // ends it holds no backend while idle; one idle inside a transaction
    // does, as it holds a server thread directly.
    s.commit0 = await step(c, 'COMMIT');
    r.sessions.push(s);
  }
  await sleep(2000);
  for (let i = 0; i < cs.length; i++) {
    const s = r.sessions[i];
    s.insert = await step(cs[i], `INSERT INTO ${t} VALUES (${i})`);
    s.commit = await step(cs[i], 'COMMIT');
  }
  // Count once the sessions are gone (through the proxy their backends
  // would still be pinned).
  await Promise.all(cs.map((c) => c.end().catch(() => c.destroy())));
  await sleep(500);
  r.count = rowsOf(await q(admin, `SELECT COUNT(*) AS n FROM ${t}`));
  check(r.count[0].n[1] === '12', `committed rows ${r.count[0].n[1]}`);
  await q(admin, `DROP TABLE ${t}`);
};

const PROC = (p, t) => `CREATE PROCEDURE ${p}(IN n INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE x INT;
  DECLARE total INT DEFAULT 0;
  DECLARE cur CURSOR FOR SELECT id FROM ${t} WHERE id <= n ORDER BY id;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN cur;
  rd: LOOP
    FETCH cur INTO x;
    IF done THEN LEAVE rd; END IF;
    SET total = total + x;
  END LOOP;
  CLOSE cur;
  SELECT total;
  SELECT id, v FROM ${t} WHERE id <= n ORDER BY id;
  SELECT n AS n, 'done' AS status;
END`;

S.cursor_call = async (r, check) => {
  const t = `${P}_cc`;
  const p = `${P}_proc`;
  const c = await connect();
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `DROP PROCEDURE IF EXISTS ${p}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, v VARCHAR(10))`);
  await q(c, `INSERT INTO ${t} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')`);
  await q(c, PROC(p, t));
  r.text = await attempt(async () => res(await q(c, `CALL ${p}(3)`)));
  r.after_text = await attempt(async () => rowsOf(await q(c, 'SELECT 1 AS one')));
  r.prepared = await attempt(async () => res(await x(c, `CALL ${p}(?)`, [4])));
  r.after_prepared = await attempt(async () => rowsOf(await q(c, 'SELECT 2 AS two')));
  check(Array.isArray(r.text) && r.text.length === 4, 'text CALL: 3 result sets + OK');
  check(Array.isArray(r.prepared) && r.prepared.length === 4, 'prepared CALL: 3 result sets + OK');
  await q(c, `DROP PROCEDURE ${p}`);
  await q(c, `DROP TABLE ${t}`);
};

S.found_rows = async (r, check) => {
  const t = `${P}_fr`;
  const c = await connect();
  await q(c, `DROP TABLE IF EXISTS ${t}, ${t}2`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY)`);
  await q(c, `CREATE TABLE ${t}2 (id INT PRIMARY KEY)`);
  await q(c, `INSERT INTO ${t} VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)`);
  const fr = async () => rowsOf(await q(c, 'SELECT FOUND_ROWS() AS fr'));
  r.limit = rowsOf(await q(c, `SELECT id FROM ${t} ORDER BY id LIMIT 2, 1`));
  r.limit_fr = await fr();
  r.calc = rowsOf(await q(c, `SELECT SQL_CALC_FOUND_ROWS id FROM ${t} ORDER BY id LIMIT 2, 1`));
  r.calc_fr = await fr();
  check(r.calc_fr[0].fr[1] === '10', `SQL_CALC_FOUND_ROWS: ${r.calc_fr[0].fr[1]}`);
  r.insert_select = header((await q(c, `INSERT INTO ${t}2 SELECT id FROM ${t} WHERE 1 = 0`))[0]);
  r.insert_select_fr = await fr();
  r.update = header((await q(c, `UPDATE ${t} SET id = id WHERE id < 3`))[0]);
  r.update_row_count = rowsOf(await q(c, 'SELECT ROW_COUNT() AS rc'));
  // Prepared.
  r.ps_calc = rowsOf(await x(c, `SELECT SQL_CALC_FOUND_ROWS id FROM ${t} ORDER BY id LIMIT ?, 1`, [4]));
  r.ps_calc_fr = rowsOf(await x(c, 'SELECT FOUND_ROWS() AS fr'));
  r.text_calc_then_ps_fr = (await q(c, `SELECT SQL_CALC_FOUND_ROWS id FROM ${t} WHERE id > 3 LIMIT 1`)) && rowsOf(await x(c, 'SELECT FOUND_ROWS() AS fr'));
  await q(c, `DROP TABLE ${t}, ${t}2`);
};

S.kill_expr = async (r, check) => {
  const c = await connect();
  const stmts = [
    'KILL QUERY (SELECT CONNECTION_ID() + 1000000)',
    'KILL (SELECT CONNECTION_ID() + 1000000)',
    'KILL QUERY CONNECTION_ID() + 1000000',
    'KILL CONNECTION CONNECTION_ID() + 1000000',
    'KILL 987654321',
  ];
  r.text = [];
  for (const s of stmts) {
    const e = await attempt(async () => { await q(c, s); return 'ok'; });
    r.text.push({ sql: s, result: e, alive: await attempt(async () => rowsOf(await q(c, 'SELECT 1 AS one'))) });
    check(e.error && e.error.errno === 1094, `${s}: want 1094, got ${JSON.stringify(e)}`);
  }
  r.prepared = [];
  for (const [s, p] of [['KILL ?', [987654321]], ['KILL QUERY ?', [987654321]], ['KILL QUERY (SELECT ? + CONNECTION_ID())', [1000000]]]) {
    const e = await attempt(async () => { await x(c, s, p); return 'ok'; });
    r.prepared.push({ sql: s, result: e, alive: await attempt(async () => rowsOf(await q(c, 'SELECT 1 AS one'))) });
  }
};

S.metadata = async (r, check) => {
  const t = `${P}_md`;
  const c = await connect({ charset: 'UTF8MB4_GENERAL_CI' });
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1, js JSON, bl BLOB, de DECIMAL(8,3))`);
  await q(c, `INSERT INTO ${t} VALUES (1, 'äb', 'é', '{"k": [1, 2]}', X'0102', 12.5)`);
  const sel = `SELECT 1 AS i, 1.5 AS d, 'abc' AS s, _utf8mb4'é' AS u, CONCAT('a', 1) AS c, UPPER(s) AS us, LENGTH(l) AS ll, l, js, JSON_OBJECT('k', 1) AS jo, bl, de, NULL AS n, id FROM ${t}`;
  for (const cs of ['utf8mb4', 'latin1']) {
    if (cs !== 'utf8mb4') await q(c, `SET NAMES ${cs}`);
    const o = {};
    const [rows, fields] = await q(c, sel);
    o.text_fields = fields.map(field);
    o.text_rows = rows.map(row);
    const [prows, pfields] = await x(c, sel + ' WHERE id = ?', [1]);
    o.binary_fields = pfields.map(field);
    o.binary_rows = prows.map(row);
    r[cs] = o;
  }
  check(r.utf8mb4.text_rows[0].us[1] === 'ÄB', `UPPER(äb) ${r.utf8mb4.text_rows[0].us[1]}`);
  await q(c, `DROP TABLE ${t}`);
};

S.greeting_charset = async (r, check) => {
  const c = await connect();
  r.driver = {
    charsetNumber: c.connection.config.charsetNumber,
    clientEncoding: c.connection.clientEncoding,
    greeting_charset: c.connection._handshakePacket ? c.connection._handshakePacket.characterSet : null,
    serverEncoding: c.connection.serverEncoding,
  };
  r.vars = rowsOf(await q(c, 'SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll, @@character_set_server AS server'));
  r.roundtrip = rowsOf(await q(c, "SELECT 'é😀' AS s, HEX('é😀') AS h"));
  check(r.roundtrip[0].s[1] === 'é😀', 'round trip');
};

S.multi = async (r, check) => {
  const t = `${P}_multi`;
  const c = await connect({ multipleStatements: true });
  await q(c, `DROP TABLE IF EXISTS ${t}`);
  await q(c, `CREATE TABLE ${t} (id INT PRIMARY KEY, v INT)`);
  r.sets = res(await q(c, `SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; INSERT INTO ${t} VALUES (1, 1), (2, 2); UPDATE ${t} SET v = v + 1 WHERE id > 0; SELECT CAST('abc' AS SIGNED) AS w; SHOW WARNINGS`));
  check(Array.isArray(r.sets) && r.sets.length === 6, 'six results');
  r.error_midway = await attempt(async () => res(await q(c, `SELECT 1 AS a; SELECT * FROM ${t}_nosuch; SELECT 2 AS b`)));
  r.after_error = await attempt(async () => rowsOf(await q(c, 'SELECT 3 AS three')));
  r.warning_select = rowsOf(await q(c, "SELECT CAST('abc' AS SIGNED) AS w"));
  r.show_warnings = rowsOf(await q(c, 'SHOW WARNINGS'));
  r.warning_count = rowsOf(await q(c, 'SELECT @@warning_count AS wc'));
  r.insert_ignore = header((await q(c, `INSERT IGNORE INTO ${t} VALUES (1, 5)`))[0]);
  r.insert_ignore_warnings = rowsOf(await q(c, 'SHOW WARNINGS'));
  r.count_warnings = rowsOf(await q(c, 'SHOW COUNT(*) WARNINGS'));
  await q(c, `DROP TABLE ${t}`);
};

async function main() {
  const want = (E.DRV_SCENARIOS || Object.keys(S).join(',')).split(',').filter(Boolean);
  for (const name of want) {
    emit({ event: 'start', scenario: name });
    const fn = S[name];
    if (!fn) {
      emit({ scenario: name, ok: false, result: null, error: 'unknown scenario' });
      continue;
    }
    const r = {};
    const fails = [];
    const check = (cond, msg) => { if (!cond) fails.push(msg); };
    let err = '';
    let timer;
    try {
      await Promise.race([
        fn(r, check),
        new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`scenario timed out after ${3 * TMO} ms`)), 3 * TMO); }),
      ]);
    } catch (e) {
      const i = errInfo(e);
      err = `${i.code || ''} ${i.errno || ''} ${i.message}`.trim();
    } finally {
      clearTimeout(timer);
    }
    await closeAll();
    emit({ scenario: name, ok: !err && fails.length === 0, result: r, error: [err, ...fails].filter(Boolean).join('; ') });
  }
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
