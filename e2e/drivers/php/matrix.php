<?php
// The driver matrix for PHP: mysqli or PDO_mysql (both on mysqlnd), chosen
// by the first argument (mysqli | pdo). Every scenario runs on its own
// connection(s) and prints one JSON line (see ../README.md).
//
// Environment: DRV_HOST DRV_PORT DRV_USER DRV_PASSWORD DRV_DB DRV_MODE
// DRV_PREFIX DRV_USER2 DRV_PASSWORD2 DRV_DB2 DRV_SCENARIOS DRV_TIMEOUT.
// Reads time out after mysqlnd.net_read_timeout (set on the command line)
// and MYSQLI_OPT_READ_TIMEOUT.

declare(strict_types=1);

$DRV = $argv[1] ?? 'mysqli';
$E = getenv();
$P = $E['DRV_PREFIX'] ?? ($DRV . '_x');
$TMO = (int)($E['DRV_TIMEOUT'] ?? 10);
$HOST = $E['DRV_HOST'] ?? '127.0.0.1';
$PORT = (int)($E['DRV_PORT'] ?? 3306);
$USER = $E['DRV_USER'] ?? 'app';
$PASS = $E['DRV_PASSWORD'] ?? '';
$DB = $E['DRV_DB'] ?? 'test';

mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);

$opened = [];

// connect opens a connection. $o: charset, compress, multi, emulate (PDO),
// user, password, db.
function connect(array $o = [])
{
    global $DRV, $HOST, $PORT, $USER, $PASS, $DB, $TMO, $opened;
    $user = $o['user'] ?? $USER;
    $pass = $o['password'] ?? $PASS;
    $db = $o['db'] ?? $DB;
    if ($DRV === 'mysqli') {
        $m = mysqli_init();
        $m->options(MYSQLI_OPT_CONNECT_TIMEOUT, $TMO);
        $m->options(MYSQLI_OPT_READ_TIMEOUT, $TMO);
        if (isset($o['charset'])) {
            $m->options(MYSQLI_SET_CHARSET_NAME, $o['charset']);
        }
        $flags = 0;
        if (!empty($o['compress'])) {
            $flags |= MYSQLI_CLIENT_COMPRESS;
        }
        // multi_query turns multi statements on by itself (COM_SET_OPTION).
        $m->real_connect($HOST, $user, $pass, $db, $PORT, null, $flags);
        $opened[] = $m;
        return $m;
    }
    $dsn = "mysql:host=$HOST;port=$PORT;dbname=$db";
    if (isset($o['charset'])) {
        $dsn .= ';charset=' . $o['charset'];
    }
    $attrs = [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_TIMEOUT => $TMO,
        PDO::ATTR_EMULATE_PREPARES => $o['emulate'] ?? false,
        PDO::MYSQL_ATTR_MULTI_STATEMENTS => !empty($o['multi']),
    ];
    if (!empty($o['compress'])) {
        $attrs[PDO::MYSQL_ATTR_COMPRESS] = true;
    }
    $p = new PDO($dsn, $user, $pass, $attrs);
    $opened[] = $p;
    return $p;
}

function close_all(): void
{
    global $opened;
    foreach ($opened as $c) {
        if ($c instanceof mysqli) {
            try {
                @$c->close();
            } catch (Throwable $e) {
            }
        }
    }
    $opened = [];
    gc_collect_cycles();
}

function emit(array $o): void
{
    echo json_encode($o, JSON_INVALID_UTF8_SUBSTITUTE | JSON_PRESERVE_ZERO_FRACTION | JSON_UNESCAPED_SLASHES), "\n";
    flush();
}

function err_info(Throwable $e): array
{
    if ($e instanceof mysqli_sql_exception) {
        return ['errno' => $e->getCode(), 'sqlstate' => $e->getSqlState(), 'message' => $e->getMessage()];
    }
    if ($e instanceof PDOException) {
        $i = $e->errorInfo ?? null;
        return ['errno' => $i[1] ?? $e->getCode(), 'sqlstate' => $i[0] ?? null, 'message' => $i[2] ?? $e->getMessage()];
    }
    return ['errno' => null, 'sqlstate' => null, 'message' => get_class($e) . ': ' . $e->getMessage()];
}

function attempt(callable $f)
{
    try {
        return $f();
    } catch (Throwable $e) {
        return ['error' => err_info($e)];
    }
}

// val is a value as the driver returned it: [type, text]; strings that are
// not valid UTF-8 are shown as hex.
function val($v): array
{
    $t = get_debug_type($v);
    if ($v === null) {
        return [$t, null];
    }
    if (is_string($v)) {
        return preg_match('//u', $v) === 1 ? [$t, $v] : [$t . '(hex)', bin2hex($v)];
    }
    if (is_float($v)) {
        return [$t, var_export($v, true)];
    }
    if (is_bool($v)) {
        return [$t, $v ? 'true' : 'false'];
    }
    if (is_scalar($v)) {
        return [$t, (string)$v];
    }
    return [$t, json_encode($v)];
}

function row(array $r): array
{
    $o = [];
    foreach ($r as $k => $v) {
        $o[$k] = val($v);
    }
    return $o;
}

function mfields(mysqli_result $res): array
{
    $out = [];
    foreach ($res->fetch_fields() as $f) {
        $out[] = ['name' => $f->name, 'orgname' => $f->orgname, 'table' => $f->table, 'orgtable' => $f->orgtable,
            'db' => $f->db, 'length' => $f->length, 'charsetnr' => $f->charsetnr, 'flags' => $f->flags,
            'type' => $f->type, 'decimals' => $f->decimals];
    }
    return $out;
}

function pmeta(PDOStatement $st): array
{
    $out = [];
    for ($i = 0; $i < $st->columnCount(); $i++) {
        $m = $st->getColumnMeta($i);
        if ($m === false) {
            $out[] = null;
            continue;
        }
        $out[] = ['name' => $m['name'], 'table' => $m['table'] ?? null, 'native_type' => $m['native_type'] ?? null,
            'pdo_type' => $m['pdo_type'], 'flags' => $m['flags'] ?? [], 'len' => $m['len'], 'precision' => $m['precision']];
    }
    return $out;
}

// q runs a text query: rows (+ fields with $meta) or the OK header.
function q($c, string $sql, bool $meta = false)
{
    if ($c instanceof mysqli) {
        $res = $c->query($sql);
        if ($res instanceof mysqli_result) {
            $rows = array_map('row', $res->fetch_all(MYSQLI_ASSOC));
            $out = $meta ? ['rows' => $rows, 'fields' => mfields($res)] : $rows;
            $res->free();
            return $out;
        }
        return mhdr($c);
    }
    $st = $c->query($sql);
    if ($st->columnCount() > 0) {
        $rows = array_map('row', $st->fetchAll(PDO::FETCH_ASSOC));
        $out = $meta ? ['rows' => $rows, 'meta' => pmeta($st)] : $rows;
        $st->closeCursor();
        return $out;
    }
    return ['rowCount' => $st->rowCount(), 'lastInsertId' => $c->lastInsertId()];
}

function mhdr(mysqli $m): array
{
    return ['affected_rows' => $m->affected_rows, 'insert_id' => $m->insert_id, 'info' => $m->info,
        'warning_count' => $m->warning_count];
}

// ps runs a server-side prepared statement once.
function ps($c, string $sql, array $params, bool $meta = false)
{
    if ($c instanceof mysqli) {
        $st = $c->prepare($sql);
        $out = st_exec($st, $params, $meta);
        $st->close();
        return $out;
    }
    $st = $c->prepare($sql);
    return pdo_exec($c, $st, $params, $meta);
}

function st_exec(mysqli_stmt $st, array $params, bool $meta = false)
{
    if ($params) {
        $types = '';
        foreach ($params as $p) {
            $types .= is_int($p) ? 'i' : (is_float($p) ? 'd' : 's');
        }
        $st->bind_param($types, ...$params);
    }
    $st->execute();
    $res = $st->get_result();
    if ($res instanceof mysqli_result) {
        $rows = array_map('row', $res->fetch_all(MYSQLI_ASSOC));
        $out = $meta ? ['rows' => $rows, 'fields' => mfields($res)] : $rows;
        $res->free();
        return $out;
    }
    return ['affected_rows' => $st->affected_rows, 'insert_id' => $st->insert_id];
}

function pdo_exec(PDO $c, PDOStatement $st, array $params, bool $meta = false)
{
    $st->execute($params);
    if ($st->columnCount() > 0) {
        $rows = array_map('row', $st->fetchAll(PDO::FETCH_ASSOC));
        $out = $meta ? ['rows' => $rows, 'meta' => pmeta($st)] : $rows;
        $st->closeCursor();
        return $out;
    }
    return ['rowCount' => $st->rowCount(), 'lastInsertId' => $c->lastInsertId()];
}

// all_sets reads every result of a multi-statement query or CALL.
function m_all_sets(mysqli $m, string $sql): array
{
    $sets = [];
    $m->multi_query($sql);
    do {
        $res = $m->store_result();
        if ($res instanceof mysqli_result) {
            $sets[] = ['rows' => array_map('row', $res->fetch_all(MYSQLI_ASSOC)), 'fields' => mfields($res)];
            $res->free();
        } else {
            $sets[] = mhdr($m);
        }
    } while ($m->more_results() && $m->next_result());
    return $sets;
}

function stmt_all_sets(mysqli_stmt $st): array
{
    $sets = [];
    do {
        $res = $st->get_result();
        if ($res instanceof mysqli_result) {
            $sets[] = ['rows' => array_map('row', $res->fetch_all(MYSQLI_ASSOC)), 'fields' => mfields($res)];
            $res->free();
        } else {
            $sets[] = ['affected_rows' => $st->affected_rows];
        }
    } while ($st->more_results() && $st->next_result());
    return $sets;
}

function pdo_all_sets(PDOStatement $st): array
{
    $sets = [];
    do {
        if ($st->columnCount() > 0) {
            $sets[] = ['rows' => array_map('row', $st->fetchAll(PDO::FETCH_ASSOC)), 'meta' => pmeta($st)];
        } else {
            $sets[] = ['rowCount' => $st->rowCount()];
        }
    } while ($st->nextRowset());
    return $sets;
}

function payload(int $n): string
{
    $abc = 'abcdefghijklmnopqrstuvwxyz0123456789';
    $s = 12345;
    $blk = '';
    for ($i = 0; $i < 65536; $i++) {
        $s = ($s * 1103515245 + 12345) & 0x7fffffff;
        $blk .= $abc[($s >> 16) % 36];
    }
    return substr(str_repeat($blk, intdiv($n, 65536) + 1), 0, $n);
}

const CYR = 'Привет';
const LAT = 'café é';
const EMO = 'emoji 😀 ok';

function hexu(string $s): string
{
    return strtoupper(bin2hex($s));
}

function types_ddl(string $t): string
{
    return "CREATE TABLE $t (id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED, mi MEDIUMINT, miu MEDIUMINT UNSIGNED,
  i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED, de DECIMAL(20,6), f FLOAT, d DOUBLE, b BIT(10),
  dt DATE, tm TIME(6), tmn TIME, dtm DATETIME(6), ts TIMESTAMP NULL DEFAULT NULL, y YEAR,
  c CHAR(10), vc VARCHAR(100), bn BINARY(4), vb VARBINARY(10), tx TEXT, bl BLOB,
  en ENUM('a','b','c'), st SET('x','y','z'), js JSON, g GEOMETRY NULL) DEFAULT CHARSET=utf8mb4";
}

function types_row(string $t): string
{
    return "INSERT INTO $t VALUES (1, -128, 255, -32768, 65535, -8388608, 16777215,
  -2147483648, 4294967295, -9223372036854775808, 18446744073709551615, -12345678901234.123456, 1.5, 2.25, b'1010101010',
  '2024-02-29', '12:34:56.789012', '-838:59:59', '2024-02-29 23:59:58.123456', '2024-03-01 00:00:01', 2024,
  'ch', 'vär', X'00FF1000', X'DEADBEEF', 'text ü', X'00010203',
  'b', 'x,z', '{\"a\": 1, \"b\": [true, null]}', ST_GeomFromText('POINT(1 2)'))";
}

$S = [];

$S['types'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_types";
    $c = connect(['charset' => 'utf8mb4']);
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, types_ddl($t));
    q($c, types_row($t));
    q($c, "INSERT INTO $t (id) VALUES (2)");
    $r['text'] = q($c, "SELECT * FROM $t ORDER BY id", true);
    $r['binary'] = ps($c, "SELECT * FROM $t WHERE id >= ? ORDER BY id", [0], true);
    foreach (['text', 'binary'] as $name) {
        $a = $r[$name]['rows'][0];
        $check($a['ti'][1] === '-128' && $a['tiu'][1] === '255' && $a['iu'][1] === '4294967295', "$name: integers");
        $check($a['vc'][1] === 'vär' && $a['tx'][1] === 'text ü' && $a['en'][1] === 'b', "$name: strings");
        $check($a['de'][1] === '-12345678901234.123456', "$name: decimal " . json_encode($a['de']));
        $nulls = true;
        foreach ($r[$name]['rows'][1] as $k => $v) {
            if ($k !== 'id' && $v[1] !== null) {
                $nulls = false;
            }
        }
        $check($nulls, "$name: NULL row");
    }
    q($c, "DROP TABLE $t");
};

$S['charset'] = function (array &$r, callable $check) use ($P, $DRV) {
    $t = "{$P}_cs";
    $c = connect(['charset' => 'utf8mb4']);
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, k VARCHAR(50) CHARACTER SET koi8r, l VARCHAR(50) CHARACTER SET latin1, u VARCHAR(50) CHARACTER SET utf8mb4)");
    q($c, "INSERT INTO $t VALUES (1, _utf8mb4 X'" . hexu(CYR) . "', _utf8mb4 X'" . hexu(LAT) . "', _utf8mb4 X'" . hexu(EMO) . "')");
    $sel = "SELECT k, l, u, HEX(k) AS hk, HEX(l) AS hl, HEX(u) AS hu, 'é' AS lit, HEX('é') AS hlit FROM $t WHERE id = 1";
    $vars = 'SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll';
    $r['set_names'] = [];
    foreach (['koi8r', 'latin1', 'utf8mb4'] as $cs) {
        q($c, "SET NAMES $cs");
        $o = ['vars' => q($c, $vars), 'text' => q($c, $sel), 'binary' => ps($c, str_replace('id = 1', 'id = ?', $sel), [1])];
        if ($c instanceof mysqli) {
            $o['driver_charset'] = $c->character_set_name();
        }
        $r['set_names'][$cs] = $o;
        $check($o['text'][0]['hk'][1] === 'F0D2C9D7C5D4', "SET NAMES $cs: koi8r bytes " . json_encode($o['text'][0]['hk']));
    }
    $r['connect_option'] = [];
    $id = 10;
    foreach ([['koi8r', 'k', CYR], ['latin1', 'l', LAT], ['utf8mb4', 'u', EMO]] as [$cs, $col, $text]) {
        $cc = connect(['charset' => $cs]);
        $o = [];
        if ($cc instanceof mysqli) {
            $o['driver_charset'] = $cc->character_set_name();
            $o['get_charset'] = (array)$cc->get_charset();
        }
        $o['vars'] = q($cc, $vars);
        $id++;
        // The text is sent in the connection's charset, as an application
        // working in it would.
        $enc = ['koi8r' => "\xF0\xD2\xC9\xD7\xC5\xD4", 'latin1' => "caf\xE9 \xE9", 'utf8mb4' => $text][$cs];
        $o['insert'] = ps($cc, "INSERT INTO $t (id, $col) VALUES (?, ?)", [$id, $enc]);
        $got = q($cc, "SELECT $col AS v, HEX($col) AS h FROM $t WHERE id = $id");
        $o['read_back'] = $got;
        $back = $got[0]['v'][0] === 'string(hex)' ? hex2bin($got[0]['v'][1]) : $got[0]['v'][1];
        $check($back === $enc, "connect charset $cs: read back " . json_encode($got[0]['v']));
        $o['row1'] = q($cc, "SELECT k, l, u, HEX(k) AS hk FROM $t WHERE id = 1");
        $r['connect_option'][$cs] = $o;
    }
    q($c, "DROP TABLE $t");
};

$S['prepared'] = function (array &$r, callable $check) use ($P, $DRV) {
    $t = "{$P}_ps";
    $c = connect(['charset' => 'utf8mb4']);
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT AUTO_INCREMENT PRIMARY KEY, i BIGINT NULL, d DOUBLE NULL, de DECIMAL(10,2) NULL,
      s VARCHAR(50) NULL, b VARBINARY(50) NULL, dt DATETIME(3) NULL, n INT NULL)");
    $params = [
        [1, 1.5, '12.34', 'one', "\x00\x01\x02", '2024-01-02 03:04:05.678', null],
        [-1099511627776, -0.25, '-0.01', 'ünï', '', '1999-12-31 23:59:59.999', 7],
        [null, null, null, null, null, null, null],
        [9007199254740991, 1e300, '99999999.99', '', 'bin', '2000-01-01 00:00:00', -1],
        [42, 3.25, '0', 'five', "\xff", null, 0],
    ];
    $ins = "INSERT INTO $t (i, d, de, s, b, dt, n) VALUES (?, ?, ?, ?, ?, ?, ?)";
    $sel = "SELECT id, i, d, de, s, b, dt, n, ? AS p, ? IS NULL AS pn FROM $t WHERE id = ?";
    $ps = ['x', 42, null, 1.5, "\x01\x02"];
    $r['inserts'] = [];
    $r['selects'] = [];
    if ($c instanceof mysqli) {
        $st = $c->prepare($ins);
        $r['param_count'] = $st->param_count;
        foreach ($params as $p) {
            $r['inserts'][] = st_exec($st, $p);
        }
        $st->close();
        $st = $c->prepare($sel);
        for ($i = 0; $i < 5; $i++) {
            $r['selects'][] = st_exec($st, [$ps[$i], $ps[$i], $i + 1]);
        }
        $st->close();
        $check(count(array_filter($r['inserts'], fn($h) => $h['affected_rows'] === 1)) === 5, 'inserts affected 1 each');
    } else {
        $st = $c->prepare($ins);
        foreach ($params as $p) {
            $r['inserts'][] = pdo_exec($c, $st, $p);
        }
        $st = null;
        $st = $c->prepare($sel);
        for ($i = 0; $i < 5; $i++) {
            $r['selects'][] = pdo_exec($c, $st, [$ps[$i], $ps[$i], $i + 1]);
        }
        $st = null;
        $check(count(array_filter($r['inserts'], fn($h) => $h['rowCount'] === 1)) === 5, 'inserts affected 1 each');
    }
    $check(($r['selects'][2][0]['pn'][1] ?? null) === '1', 'NULL parameter IS NULL');
    $r['reprepared'] = ps($c, $sel, ['y', null, 2]);
    // Room for only 50 more statements on the server (other connections,
    // such as idle proxies' pools, hold some).
    $old = (int)q($c, 'SELECT @@GLOBAL.max_prepared_stmt_count AS v')[0]['v'][1];
    $held = (int)q($c, "SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")[0]['Value'][1];
    q($c, 'SET GLOBAL max_prepared_stmt_count = ' . ($held + 50));
    $ok = 0;
    $failed = 0;
    $first = null;
    try {
        for ($i = 0; $i < 200; $i++) {
            try {
                $got = ps($c, "SELECT ? + $i AS v", [1]);
                if ((float)$got[0]['v'][1] === (float)(1 + $i)) {
                    $ok++;
                }
            } catch (Throwable $e) {
                $failed++;
                if ($first === null) {
                    $first = ['at' => $i] + err_info($e);
                }
            }
        }
    } finally {
        q($c, "SET GLOBAL max_prepared_stmt_count = $old");
    }
    $r['limit_loop'] = ['ok' => $ok, 'failed' => $failed, 'first_error' => $first];
    $check($ok === 200, "prepare/close loop: $ok of 200");
    q($c, "DROP TABLE $t");
};

$S['compression'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_comp";
    $c = connect(['compress' => true, 'charset' => 'utf8mb4']);
    $r['status'] = q($c, "SHOW SESSION STATUS LIKE 'Compression'");
    $r['select1'] = q($c, 'SELECT 1 AS one');
    $big = q($c, "SELECT REPEAT('abcdefghij', 104858) AS v")[0]['v'][1];
    $r['big_result'] = ['length' => strlen($big), 'md5' => md5($big)];
    $check(strlen($big) === 1048580, '1 MB result');
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, v MEDIUMTEXT)");
    $p = payload(1 << 20);
    $r['big_insert'] = q($c, "INSERT INTO $t VALUES (1, '$p')");
    $r['big_insert_prepared'] = ps($c, "INSERT INTO $t VALUES (2, ?)", [$p]);
    $r['server_side'] = q($c, "SELECT id, LENGTH(v) AS len, MD5(v) AS md5 FROM $t ORDER BY id");
    $back = q($c, "SELECT v FROM $t WHERE id = 1")[0]['v'][1];
    $r['read_back'] = ['length' => strlen($back), 'md5' => md5($back), 'equal' => $back === $p];
    $check($back === $p, '1 MB read back');
    q($c, "DROP TABLE $t");
};

$S['batch'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_batch";
    $c = connect();
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, v VARCHAR(20))");
    $vals = [];
    for ($i = 1; $i <= 50; $i++) {
        $vals[] = "($i, 'v$i')";
    }
    $r['multirow_text'] = q($c, "INSERT INTO $t (id, v) VALUES " . implode(', ', array_slice($vals, 0, 25)));
    $params = [];
    for ($i = 26; $i <= 50; $i++) {
        array_push($params, $i, "v$i");
    }
    $r['multirow_prepared'] = ps($c, "INSERT INTO $t (id, v) VALUES " . implode(', ', array_fill(0, 25, '(?, ?)')), $params);
    $r['duplicate'] = attempt(fn() => ps($c, "INSERT INTO $t (id, v) VALUES (?, ?), (?, ?), (?, ?)", [51, 'a', 52, 'b', 10, 'dup']));
    $r['upsert'] = q($c, "INSERT INTO $t (id, v) VALUES (1, 'one'), (2, 'v2'), (60, 'new') ON DUPLICATE KEY UPDATE v = VALUES(v)");
    // One statement executed for many rows.
    $r['repeated'] = [];
    if ($c instanceof mysqli) {
        $st = $c->prepare("INSERT INTO $t (id, v) VALUES (?, ?)");
        foreach ([[70, 'p'], [71, 'q'], [72, 'r']] as $p) {
            $r['repeated'][] = st_exec($st, $p);
        }
        $st->close();
    } else {
        $st = $c->prepare("INSERT INTO $t (id, v) VALUES (?, ?)");
        foreach ([[70, 'p'], [71, 'q'], [72, 'r']] as $p) {
            $r['repeated'][] = pdo_exec($c, $st, $p);
        }
        $st = null;
    }
    $r['count'] = q($c, "SELECT COUNT(*) AS n, SUM(id) AS s FROM $t");
    $check($r['count'][0]['n'][1] === '54', 'count ' . json_encode($r['count']));
    q($c, "DROP TABLE $t");
};

$S['large_packet'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_big";
    $admin = connect();
    $old = (int)q($admin, 'SELECT @@GLOBAL.max_allowed_packet AS v')[0]['v'][1];
    q($admin, 'SET GLOBAL max_allowed_packet = 67108864');
    try {
        $c = connect();
        $r['session'] = q($c, 'SELECT @@max_allowed_packet AS map, @@SESSION.max_allowed_packet AS smap');
        q($c, "DROP TABLE IF EXISTS $t");
        q($c, "CREATE TABLE $t (id INT PRIMARY KEY, b LONGBLOB)");
        $p = payload(20 << 20);
        $r['insert_text'] = attempt(fn() => q($c, "INSERT INTO $t VALUES (1, '$p')"));
        $r['insert_prepared'] = attempt(fn() => ps($c, "INSERT INTO $t VALUES (2, ?)", [$p]));
        $r['server_side'] = attempt(fn() => q($c, "SELECT id, LENGTH(b) AS len, MD5(b) AS md5 FROM $t ORDER BY id"));
        $r['read_back'] = attempt(function () use ($c, $t, $p) {
            $out = [];
            foreach ([1, 2] as $id) {
                $rows = q($c, "SELECT b FROM $t WHERE id = $id");
                if (!$rows) {
                    $out[] = ['id' => $id, 'missing' => true];
                    continue;
                }
                $b = $rows[0]['b'][1];
                $out[] = ['id' => $id, 'length' => strlen($b), 'md5' => md5($b), 'equal' => $b === $p];
            }
            return $out;
        });
        $ok = is_array($r['read_back']) && !isset($r['read_back']['error']);
        foreach ($ok ? $r['read_back'] : [] as $x) {
            $ok = $ok && !empty($x['equal']);
        }
        $check($ok, '20 MB rows read back');
        attempt(fn() => q($c, "DROP TABLE $t"));
    } finally {
        q($admin, "SET GLOBAL max_allowed_packet = $old");
    }
};

$S['globals'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_glob";
    $admin = connect();
    $old = q($admin, 'SELECT @@GLOBAL.sql_mode AS mode, @@GLOBAL.net_buffer_length AS nbl')[0];
    $r['old'] = $old;
    q($admin, "SET GLOBAL sql_mode = ''");
    q($admin, 'SET GLOBAL net_buffer_length = 32768');
    try {
        $c = connect();
        $r['session'] = q($c, 'SELECT @@SESSION.sql_mode AS mode, @@GLOBAL.sql_mode AS gmode, @@SESSION.net_buffer_length AS nbl');
        q($c, "DROP TABLE IF EXISTS $t");
        q($c, "CREATE TABLE $t (v VARCHAR(3))");
        $r['long_insert'] = attempt(fn() => q($c, "INSERT INTO $t VALUES ('abcdef')"));
        $r['warnings'] = q($c, 'SHOW WARNINGS');
        $r['stored'] = q($c, "SELECT v FROM $t");
        $check(strpos($r['session'][0]['mode'][1], 'STRICT') === false, 'new session sql_mode ' . json_encode($r['session'][0]['mode']));
        q($c, "DROP TABLE $t");
    } finally {
        q($admin, "SET GLOBAL sql_mode = '" . $old['mode'][1] . "'");
        q($admin, 'SET GLOBAL net_buffer_length = ' . (int)$old['nbl'][1]);
    }
    $c2 = connect();
    $r['after_restore'] = q($c2, 'SELECT @@SESSION.sql_mode AS mode, @@SESSION.net_buffer_length AS nbl');
    $check(strpos($r['after_restore'][0]['mode'][1], 'STRICT_TRANS_TABLES') !== false, 'sql_mode after restore');
};

$S['change_user'] = function (array &$r, callable $check) use ($DRV, $E, $USER, $PASS, $DB) {
    if ($DRV !== 'mysqli') {
        return 'PDO has no change-user API';
    }
    $c = connect();
    q($c, 'SET @v = 1');
    $who = "SELECT CURRENT_USER() AS cu, SUBSTRING_INDEX(USER(), '@', 1) AS u, DATABASE() AS db, @v AS v";
    $r['before'] = q($c, $who);
    $r['change'] = $c->change_user($E['DRV_USER2'], $E['DRV_PASSWORD2'], $E['DRV_DB2']);
    $r['after'] = q($c, $who);
    $a = $r['after'][0];
    $check($a['u'][1] === $E['DRV_USER2'] && $a['db'][1] === $E['DRV_DB2'] && $a['v'][1] === null, 'after change_user');
    $r['change_back'] = $c->change_user($USER, $PASS, $DB);
    $r['back'] = q($c, $who);
    $bad = connect();
    $r['bad_password'] = attempt(fn() => $bad->change_user($E['DRV_USER2'], 'wrong', $E['DRV_DB2']));
};

$S['autocommit0'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_ac";
    $admin = connect();
    q($admin, "DROP TABLE IF EXISTS $t");
    q($admin, "CREATE TABLE $t (id INT PRIMARY KEY)");
    $step = function (callable $f) {
        try {
            $v = $f();
            return $v ?? 'ok';
        } catch (Throwable $e) {
            $i = err_info($e);
            return ['errno' => $i['errno'], 'message' => $i['message']];
        }
    };
    $cs = [];
    $r['sessions'] = [];
    for ($i = 0; $i < 12; $i++) {
        $c = null;
        $s = ['connect' => $step(function () use (&$c) {
            $c = connect();
            return null;
        })];
        $cs[] = $c;
        if ($c === null) {
            $r['sessions'][] = $s;
            continue;
        }
        if ($c instanceof mysqli) {
            $s['autocommit'] = $step(fn() => $c->autocommit(false) ? null : 'false');
        } else {
            $s['autocommit'] = $step(fn() => $c->setAttribute(PDO::ATTR_AUTOCOMMIT, false) ? null : 'false');
        }
        $s['select'] = $step(fn() => q($c, "SELECT COUNT(*) AS n, @@autocommit AS ac FROM $t"));
        // The SELECT opened a transaction: ended, the session idles without a backend.
        $s['commit0'] = $step(fn() => $c->commit() ? null : 'false');
        $r['sessions'][] = $s;
    }
    sleep(2);
    foreach ($cs as $i => $c) {
        if ($c === null) {
            continue;
        }
        $r['sessions'][$i]['insert'] = $step(function () use ($c, $t, $i) {
            q($c, "INSERT INTO $t VALUES ($i)");
            return null;
        });
        $r['sessions'][$i]['commit'] = $step(fn() => $c->commit() ? null : 'false');
    }
    // Count once the sessions are gone (through the proxy their backends
    // would still be pinned).
    foreach (array_filter($cs) as $c) {
        if ($c instanceof mysqli) {
            try {
                $c->close();
            } catch (Throwable $e) {
            }
        }
    }
    $cs = [];
    $c = null;
    $GLOBALS['opened'] = [$admin];
    gc_collect_cycles();
    usleep(500000);
    $r['count'] = q($admin, "SELECT COUNT(*) AS n FROM $t");
    $check($r['count'][0]['n'][1] === '12', 'committed rows ' . json_encode($r['count']));
    q($admin, "DROP TABLE $t");
};

function proc_ddl(string $p, string $t): string
{
    return "CREATE PROCEDURE $p(IN n INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE x INT;
  DECLARE total INT DEFAULT 0;
  DECLARE cur CURSOR FOR SELECT id FROM $t WHERE id <= n ORDER BY id;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN cur;
  rd: LOOP
    FETCH cur INTO x;
    IF done THEN LEAVE rd; END IF;
    SET total = total + x;
  END LOOP;
  CLOSE cur;
  SELECT total;
  SELECT id, v FROM $t WHERE id <= n ORDER BY id;
  SELECT n AS n, 'done' AS status;
END";
}

$S['cursor_call'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_cc";
    $p = "{$P}_proc";
    $c = connect();
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "DROP PROCEDURE IF EXISTS $p");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, v VARCHAR(10))");
    q($c, "INSERT INTO $t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')");
    q($c, proc_ddl($p, $t));
    if ($c instanceof mysqli) {
        $r['text'] = attempt(fn() => m_all_sets($c, "CALL $p(3)"));
        $r['after_text'] = attempt(fn() => q($c, 'SELECT 1 AS one'));
        $r['prepared'] = attempt(function () use ($c, $p) {
            $st = $c->prepare("CALL $p(?)");
            $n = 4;
            $st->bind_param('i', $n);
            $st->execute();
            $out = stmt_all_sets($st);
            $st->close();
            return $out;
        });
    } else {
        $r['text'] = attempt(fn() => pdo_all_sets($c->query("CALL $p(3)")));
        $r['after_text'] = attempt(fn() => q($c, 'SELECT 1 AS one'));
        $r['prepared'] = attempt(function () use ($c, $p) {
            $st = $c->prepare("CALL $p(?)");
            $st->execute([4]);
            return pdo_all_sets($st);
        });
    }
    $r['after_prepared'] = attempt(fn() => q($c, 'SELECT 2 AS two'));
    $check(is_array($r['text']) && !isset($r['text']['error']) && count($r['text']) === 4, 'text CALL: 3 result sets + OK');
    $check(is_array($r['prepared']) && !isset($r['prepared']['error']) && count($r['prepared']) >= 3, 'prepared CALL: 3 result sets');
    $d = connect();
    q($d, "DROP PROCEDURE $p");
    q($d, "DROP TABLE $t");
};

$S['found_rows'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_fr";
    $c = connect();
    q($c, "DROP TABLE IF EXISTS $t, {$t}2");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY)");
    q($c, "CREATE TABLE {$t}2 (id INT PRIMARY KEY)");
    q($c, "INSERT INTO $t VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)");
    $fr = fn() => q($c, 'SELECT FOUND_ROWS() AS fr');
    $r['limit'] = q($c, "SELECT id FROM $t ORDER BY id LIMIT 2, 1");
    $r['limit_fr'] = $fr();
    $r['calc'] = q($c, "SELECT SQL_CALC_FOUND_ROWS id FROM $t ORDER BY id LIMIT 2, 1");
    $r['calc_fr'] = $fr();
    $check($r['calc_fr'][0]['fr'][1] === '10', 'SQL_CALC_FOUND_ROWS ' . json_encode($r['calc_fr']));
    $r['insert_select'] = q($c, "INSERT INTO {$t}2 SELECT id FROM $t WHERE 1 = 0");
    $r['insert_select_fr'] = $fr();
    $r['update'] = q($c, "UPDATE $t SET id = id WHERE id < 3");
    $r['update_row_count'] = q($c, 'SELECT ROW_COUNT() AS rc');
    $r['ps_calc'] = ps($c, "SELECT SQL_CALC_FOUND_ROWS id FROM $t ORDER BY id LIMIT ?, 1", [4]);
    $r['ps_calc_fr'] = ps($c, 'SELECT FOUND_ROWS() AS fr', []);
    q($c, "SELECT SQL_CALC_FOUND_ROWS id FROM $t WHERE id > 3 LIMIT 1");
    $r['text_calc_then_ps_fr'] = ps($c, 'SELECT FOUND_ROWS() AS fr', []);
    q($c, "DROP TABLE $t, {$t}2");
};

$S['kill_expr'] = function (array &$r, callable $check) {
    $c = connect();
    $r['text'] = [];
    foreach (['KILL QUERY (SELECT CONNECTION_ID() + 1000000)', 'KILL (SELECT CONNECTION_ID() + 1000000)',
        'KILL QUERY CONNECTION_ID() + 1000000', 'KILL CONNECTION CONNECTION_ID() + 1000000', 'KILL 987654321'] as $s) {
        $e = attempt(function () use ($c, $s) {
            q($c, $s);
            return 'ok';
        });
        $r['text'][] = ['sql' => $s, 'result' => $e, 'alive' => attempt(fn() => q($c, 'SELECT 1 AS one'))];
        $check(($e['error']['errno'] ?? null) === 1094, "$s: want 1094, got " . json_encode($e));
    }
    $r['prepared'] = [];
    foreach ([['KILL ?', [987654321]], ['KILL QUERY ?', [987654321]], ['KILL QUERY (SELECT ? + CONNECTION_ID())', [1000000]]] as [$s, $p]) {
        $e = attempt(function () use ($c, $s, $p) {
            ps($c, $s, $p);
            return 'ok';
        });
        $r['prepared'][] = ['sql' => $s, 'result' => $e, 'alive' => attempt(fn() => q($c, 'SELECT 1 AS one'))];
    }
};

$S['metadata'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_md";
    $c = connect(['charset' => 'utf8mb4']);
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, l VARCHAR(20) CHARACTER SET latin1, js JSON, bl BLOB, de DECIMAL(8,3))");
    q($c, "INSERT INTO $t VALUES (1, 'äb', 'é', '{\"k\": [1, 2]}', X'0102', 12.5)");
    $sel = "SELECT 1 AS i, 1.5 AS d, 'abc' AS s, _utf8mb4'é' AS u, CONCAT('a', 1) AS c, UPPER(s) AS us, LENGTH(l) AS ll, l, js, JSON_OBJECT('k', 1) AS jo, bl, de, NULL AS n, id FROM $t";
    foreach (['utf8mb4', 'latin1'] as $cs) {
        if ($cs !== 'utf8mb4') {
            q($c, "SET NAMES $cs");
        }
        $r[$cs] = ['text' => q($c, $sel, true), 'binary' => ps($c, "$sel WHERE id = ?", [1], true)];
        if ($c instanceof mysqli) {
            $r[$cs]['driver_charset'] = $c->character_set_name();
        }
    }
    $check($r['utf8mb4']['text']['rows'][0]['us'][1] === 'ÄB', 'UPPER(äb) ' . json_encode($r['utf8mb4']['text']['rows'][0]['us']));
    q($c, "DROP TABLE $t");
};

$S['greeting_charset'] = function (array &$r, callable $check) {
    $c = connect();
    if ($c instanceof mysqli) {
        $r['driver'] = ['character_set_name' => $c->character_set_name(), 'get_charset' => (array)$c->get_charset()];
    }
    $r['vars'] = q($c, 'SELECT @@character_set_client AS client, @@character_set_connection AS conn, @@character_set_results AS results, @@collation_connection AS coll, @@character_set_server AS server');
    $r['roundtrip'] = q($c, "SELECT 'é' AS s, HEX('é') AS h");
};

$S['multi'] = function (array &$r, callable $check) use ($P) {
    $t = "{$P}_multi";
    $c = connect(['multi' => true, 'emulate' => true]);
    q($c, "DROP TABLE IF EXISTS $t");
    q($c, "CREATE TABLE $t (id INT PRIMARY KEY, v INT)");
    $sql = "SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; INSERT INTO $t VALUES (1, 1), (2, 2); UPDATE $t SET v = v + 1 WHERE id > 0; SELECT CAST('abc' AS SIGNED) AS w; SHOW WARNINGS";
    $sets = fn($s) => $c instanceof mysqli ? m_all_sets($c, $s) : pdo_all_sets($c->query($s));
    $r['sets'] = $sets($sql);
    $check(count($r['sets']) === 6, 'six results: ' . count($r['sets']));
    $r['error_midway'] = attempt(fn() => $sets("SELECT 1 AS a; SELECT * FROM {$t}_nosuch; SELECT 2 AS b"));
    $r['after_error'] = attempt(fn() => q($c, 'SELECT 3 AS three'));
    $r['warning_select'] = q($c, "SELECT CAST('abc' AS SIGNED) AS w");
    if ($c instanceof mysqli) {
        $r['warning_count_api'] = $c->warning_count;
    }
    $r['show_warnings'] = q($c, 'SHOW WARNINGS');
    $r['warning_count'] = q($c, 'SELECT @@warning_count AS wc');
    $r['insert_ignore'] = q($c, "INSERT IGNORE INTO $t VALUES (1, 5)");
    $r['insert_ignore_warnings'] = q($c, 'SHOW WARNINGS');
    $r['count_warnings'] = q($c, 'SHOW COUNT(*) WARNINGS');
    q($c, "DROP TABLE $t");
};

$want = array_values(array_filter(explode(',', $E['DRV_SCENARIOS'] ?? implode(',', array_keys($S)))));
foreach ($want as $name) {
    emit(['event' => 'start', 'scenario' => $name]);
    if (!isset($S[$name])) {
        emit(['scenario' => $name, 'ok' => false, 'result' => null, 'error' => 'unknown scenario']);
        continue;
    }
    $r = [];
    $fails = [];
    $check = function ($cond, string $msg) use (&$fails) {
        if (!$cond) {
            $fails[] = $msg;
        }
    };
    $err = '';
    $skip = null;
    $t0 = microtime(true);
    try {
        $skip = $S[$name]($r, $check);
    } catch (Throwable $e) {
        $i = err_info($e);
        $err = trim(($i['errno'] ?? '') . ' ' . $i['message']);
    }
    close_all();
    $ms = (int)((microtime(true) - $t0) * 1000);
    if (is_string($skip)) {
        emit(['scenario' => $name, 'ok' => true, 'skip' => $skip, 'result' => null, 'elapsed_ms' => $ms]);
        continue;
    }
    emit(['scenario' => $name, 'ok' => $err === '' && !$fails, 'result' => $r,
        'error' => implode('; ', array_filter(array_merge([$err], $fails))), 'elapsed_ms' => $ms]);
}
