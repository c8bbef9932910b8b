package sqlscan_test

import (
	"math"
	"strings"
	"testing"

	"github.com/tpproxy/tpproxy/proxy/internal/sqlscan"
)

// scanCase is one query with the Kind, the exact Flags and Multi it must produce.
type scanCase struct {
	q     string
	kind  sqlscan.Kind
	flags sqlscan.Flags
	multi bool
}

var scanCases = []scanCase{
	// Kinds.
	{q: "SELECT c FROM sbtest1 WHERE id=4242", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "  /* hi */ select 1", kind: sqlscan.KindSelect},
	{q: "\n\t-- c\n# d\nSELECT 1", kind: sqlscan.KindSelect},
	{q: "((SELECT 1)) UNION (SELECT 2)", kind: sqlscan.KindSelect},
	{q: "insert into t values (1)", kind: sqlscan.KindInsert},
	{q: "UPDATE t SET a=1", kind: sqlscan.KindUpdate},
	{q: "DELETE FROM t WHERE a=1", kind: sqlscan.KindDelete, flags: sqlscan.FlagFrom},
	{q: "REPLACE INTO t VALUES (1)", kind: sqlscan.KindReplace},
	{q: "SET NAMES utf8mb4", kind: sqlscan.KindSet},
	{q: "SET autocommit=0", kind: sqlscan.KindSet},
	{q: "SHOW TABLES", kind: sqlscan.KindShow},
	{q: "USE db", kind: sqlscan.KindUse},
	{q: "BEGIN", kind: sqlscan.KindBegin},
	{q: "begin work", kind: sqlscan.KindBegin},
	{q: "START TRANSACTION", kind: sqlscan.KindBegin},
	{q: "start transaction read only", kind: sqlscan.KindBegin},
	{q: "START /* c */ TRANSACTION WITH CONSISTENT SNAPSHOT", kind: sqlscan.KindBegin},
	{q: "START SLAVE", kind: sqlscan.KindOther},
	{q: "BEGIN NOT ATOMIC SELECT 1; END", kind: sqlscan.KindOther, multi: true},
	{q: "COMMIT", kind: sqlscan.KindCommit},
	{q: "commit work and chain", kind: sqlscan.KindCommit},
	{q: "ROLLBACK", kind: sqlscan.KindRollback},
	{q: "ROLLBACK TO SAVEPOINT s1", kind: sqlscan.KindRollback},
	{q: "KILL 5", kind: sqlscan.KindKill},
	{q: "LOCK TABLES t READ", kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables},
	{q: "lock table t write, u read", kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables},
	{q: "LOCK INSTANCE FOR BACKUP", kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables},
	{q: "UNLOCK TABLES", kind: sqlscan.KindUnlock, flags: sqlscan.FlagUnlockTables},
	{q: "unlock table", kind: sqlscan.KindUnlock, flags: sqlscan.FlagUnlockTables},
	{q: "UNLOCK INSTANCE", kind: sqlscan.KindUnlock},
	{q: "LOAD DATA INFILE '/tmp/x' INTO TABLE t", kind: sqlscan.KindLoad},
	{q: "LOAD INDEX INTO CACHE t", kind: sqlscan.KindLoad},
	{q: "CALL p(1)", kind: sqlscan.KindCall},
	{q: "PREPARE s FROM 'SELECT 1'", kind: sqlscan.KindPrepare, flags: sqlscan.FlagSQLPrepare | sqlscan.FlagFrom},
	{q: "EXECUTE s USING @a", kind: sqlscan.KindExecute, flags: sqlscan.FlagSQLPrepare | sqlscan.FlagUserVar},
	{q: "EXECUTE IMMEDIATE 'SELECT 1'", kind: sqlscan.KindExecute, flags: sqlscan.FlagSQLPrepare},
	{q: "DEALLOCATE PREPARE s", kind: sqlscan.KindDeallocate, flags: sqlscan.FlagSQLPrepare},
	{q: "drop prepare s", kind: sqlscan.KindDeallocate, flags: sqlscan.FlagSQLPrepare},
	{q: "XA START 'x'", kind: sqlscan.KindXA, flags: sqlscan.FlagXA},
	{q: "xa commit 'x'", kind: sqlscan.KindXA, flags: sqlscan.FlagXA},
	{q: "HANDLER t OPEN", kind: sqlscan.KindHandler, flags: sqlscan.FlagHandler},
	{q: "handler t read next", kind: sqlscan.KindHandler, flags: sqlscan.FlagHandler},
	{q: "FLUSH PRIVILEGES", kind: sqlscan.KindFlush},
	{q: "FLUSH TABLES t", kind: sqlscan.KindFlush},
	{q: "CREATE TABLE t (a int)", kind: sqlscan.KindCreate},
	{q: "CREATE TABLE t (temporary int)", kind: sqlscan.KindCreate},
	{q: "DROP TABLE t", kind: sqlscan.KindDrop},
	{q: "DROP TABLE temporary", kind: sqlscan.KindDrop},
	{q: "ALTER TABLE t ADD c int", kind: sqlscan.KindAlter},
	{q: "WITH c AS (SELECT 1) SELECT * FROM c", kind: sqlscan.KindWith, flags: sqlscan.FlagFrom},
	{q: "DO SLEEP(1)", kind: sqlscan.KindDo},
	{q: "VALUES ROW(1,2)", kind: sqlscan.KindValues},
	{q: "TABLE t", kind: sqlscan.KindTable},
	{q: "EXPLAIN SELECT 1", kind: sqlscan.KindExplain},
	{q: "DESCRIBE t", kind: sqlscan.KindDescribe},
	{q: "desc t", kind: sqlscan.KindDescribe},
	{q: "SAVEPOINT s", kind: sqlscan.KindSavepoint},
	{q: "RELEASE SAVEPOINT s", kind: sqlscan.KindRelease},
	{q: "GRANT SELECT ON *.* TO x", kind: sqlscan.KindOther},
	{q: "", kind: sqlscan.KindOther},
	{q: " \t\r\n\v\f", kind: sqlscan.KindOther},
	{q: "-- only a comment", kind: sqlscan.KindOther},
	{q: "42", kind: sqlscan.KindOther},
	{q: "`select` 1", kind: sqlscan.KindOther},
	{q: "x.select", kind: sqlscan.KindOther},
	{q: "/*!40101 SET NAMES utf8 */", kind: sqlscan.KindSet},
	{q: "/*M!100301 SELECT 1 */", kind: sqlscan.KindSelect},
	{q: ";SELECT 1", kind: sqlscan.KindOther, multi: true},

	// FlagUserVar.
	{q: "SELECT @x", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT @'x'", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: `SELECT @"x"`, kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT @`x`", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SET @a := 1", kind: sqlscan.KindSet, flags: sqlscan.FlagUserVar},
	{q: "SELECT a INTO @a FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar | sqlscan.FlagFrom},
	{q: "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE */", kind: sqlscan.KindSet, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1 --@x", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1--@x", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1 /*M! , @x */", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1 /*M!100301 , @x */", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "/*! SELECT '*/' , @x */", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1 /*!50718 /* c */ , @x */", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "SELECT 1 -- c\x00@x", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar},
	{q: "CREATE USER 'bob'@'localhost'", kind: sqlscan.KindCreate, flags: sqlscan.FlagUserVar},
	{q: "SELECT 'a@b.com'", kind: sqlscan.KindSelect},
	{q: `SELECT "@x"`, kind: sqlscan.KindSelect},
	{q: "SELECT `a@b`", kind: sqlscan.KindSelect},
	{q: "SELECT `a``@b`", kind: sqlscan.KindSelect},
	{q: "SELECT 1 /* @x */", kind: sqlscan.KindSelect},
	{q: "SELECT 1 -- @x", kind: sqlscan.KindSelect},
	{q: "SELECT 1 --\t@x", kind: sqlscan.KindSelect},
	{q: "SELECT 1 # @x", kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*+ @x */", kind: sqlscan.KindSelect},
	{q: "SELECT 1 /*!50718 /* @x */ */", kind: sqlscan.KindSelect},
	{q: "SELECT '*/ @x' /*! , 1 */", kind: sqlscan.KindSelect},
	{q: "SELECT @@session.sql_mode", kind: sqlscan.KindSelect},
	{q: "SELECT @@global.max_connections, @@SQL_MODE", kind: sqlscan.KindSelect},
	{q: "SELECT 'it''s @x'", kind: sqlscan.KindSelect},
	{q: `SELECT 'a\'@x'`, kind: sqlscan.KindSelect},
	{q: `SELECT "a""@x"`, kind: sqlscan.KindSelect},
	{q: `SELECT 'a\\', "@x"`, kind: sqlscan.KindSelect},
	{q: "SELECT 1 /* unterminated @x", kind: sqlscan.KindSelect},
	{q: "SELECT 'unterminated @x", kind: sqlscan.KindSelect},

	// FlagTempTable.
	{q: "CREATE TEMPORARY TABLE t (a int)", kind: sqlscan.KindCreate, flags: sqlscan.FlagTempTable},
	{q: "create or replace temporary table t (a int)", kind: sqlscan.KindCreate, flags: sqlscan.FlagTempTable},
	{q: "DROP TEMPORARY TABLE IF EXISTS t", kind: sqlscan.KindDrop, flags: sqlscan.FlagTempTable},
	{q: "CREATE TABLE temporary_x (a int)", kind: sqlscan.KindCreate},
	{q: "CREATE OR REPLACE VIEW v AS SELECT temporary FROM t", kind: sqlscan.KindCreate, flags: sqlscan.FlagFrom},

	// FlagLockTables / FlagUnlockTables beyond LOCK and UNLOCK.
	{q: "FLUSH TABLES WITH READ LOCK", kind: sqlscan.KindFlush, flags: sqlscan.FlagLockTables},
	{q: "flush tables t1, t2 with read lock", kind: sqlscan.KindFlush, flags: sqlscan.FlagLockTables},
	{q: "FLUSH TABLES t FOR EXPORT", kind: sqlscan.KindFlush, flags: sqlscan.FlagLockTables},
	{q: "BACKUP LOCK t", kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables},
	{q: "BACKUP UNLOCK", kind: sqlscan.KindUnlock, flags: sqlscan.FlagUnlockTables},
	{q: "BACKUP STAGE START", kind: sqlscan.KindOther, flags: sqlscan.FlagLockTables},
	{q: "SELECT * FROM t FOR UPDATE", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT * FROM t LOCK IN SHARE MODE", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT * FROM t WITH READ LOCK", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},

	// FlagGetLock / FlagReleaseLock.
	{q: "SELECT GET_LOCK('a', 10)", kind: sqlscan.KindSelect, flags: sqlscan.FlagGetLock},
	{q: "select get_lock ('a',1)", kind: sqlscan.KindSelect, flags: sqlscan.FlagGetLock},
	{q: "SELECT get_lock/* c */('a', 1)", kind: sqlscan.KindSelect, flags: sqlscan.FlagGetLock},
	{q: "SELECT `GET_LOCK`('a',1)", kind: sqlscan.KindSelect, flags: sqlscan.FlagGetLock},
	{q: "DO GET_LOCK('a', 0)", kind: sqlscan.KindDo, flags: sqlscan.FlagGetLock},
	{q: "SELECT IS_FREE_LOCK('a'), IS_USED_LOCK('a')", kind: sqlscan.KindSelect},
	{q: "SELECT 'GET_LOCK(1)'", kind: sqlscan.KindSelect},
	{q: "SELECT get_lock FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT db.get_lock('a',1)", kind: sqlscan.KindSelect},
	{q: "SELECT my_get_lock('a')", kind: sqlscan.KindSelect},
	{q: "SELECT RELEASE_LOCK('a')", kind: sqlscan.KindSelect, flags: sqlscan.FlagReleaseLock},
	{q: "select release_all_locks()", kind: sqlscan.KindSelect, flags: sqlscan.FlagReleaseLock},
	{q: "SELECT release_lock", kind: sqlscan.KindSelect},

	// FlagCalcFoundRows / FlagFoundRows / FlagRowCount.
	{q: "SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1", kind: sqlscan.KindSelect, flags: sqlscan.FlagCalcFoundRows | sqlscan.FlagFrom},
	{q: "SELECT 'SQL_CALC_FOUND_ROWS'", kind: sqlscan.KindSelect},
	{q: "SELECT FOUND_ROWS()", kind: sqlscan.KindSelect, flags: sqlscan.FlagFoundRows},
	{q: "SELECT found_rows FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT ROW_COUNT()", kind: sqlscan.KindSelect, flags: sqlscan.FlagRowCount},
	{q: "SELECT row_count FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},

	// FlagSetTransaction.
	{q: "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "set transaction read only", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET /* c */ TRANSACTION READ WRITE", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", kind: sqlscan.KindSet},
	{q: "SET GLOBAL TRANSACTION READ WRITE", kind: sqlscan.KindSet},
	{q: "SET LOCAL TRANSACTION READ ONLY", kind: sqlscan.KindSet},
	{q: "SET /*!80000 SESSION */ TRANSACTION READ ONLY", kind: sqlscan.KindSet},
	{q: "SET @@transaction_isolation = 'READ-COMMITTED'", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET transaction_isolation='READ-COMMITTED'", kind: sqlscan.KindSet},

	// FlagLoadLocal.
	{q: "LOAD DATA LOCAL INFILE 'x' INTO TABLE t", kind: sqlscan.KindLoad, flags: sqlscan.FlagLoadLocal},
	{q: "load data low_priority local infile 'x' into table t", kind: sqlscan.KindLoad, flags: sqlscan.FlagLoadLocal},
	{q: "LOAD DATA CONCURRENT LOCAL INFILE 'x' INTO TABLE t", kind: sqlscan.KindLoad, flags: sqlscan.FlagLoadLocal},
	{q: "LOAD XML LOCAL INFILE 'x' INTO TABLE t", kind: sqlscan.KindLoad, flags: sqlscan.FlagLoadLocal},
	{q: "LOAD DATA INFILE 'local' INTO TABLE local", kind: sqlscan.KindLoad},
	{q: "LOAD DATA LOW_PRIORITY INFILE 'x' INTO TABLE t", kind: sqlscan.KindLoad},

	// FlagLastInsertIDArg / FlagLastInsertIDRead.
	{q: "SELECT LAST_INSERT_ID()", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDRead},
	{q: "SELECT LAST_INSERT_ID( /* c */ )", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDRead},
	{q: "SELECT LAST_INSERT_ID(5)", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDArg},
	{q: "UPDATE t SET id = LAST_INSERT_ID(id + 1)", kind: sqlscan.KindUpdate, flags: sqlscan.FlagLastInsertIDArg},
	{q: "SELECT LAST_INSERT_ID(", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDArg},
	{q: "SELECT last_insert_id FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},

	// FlagDiagnostics.
	{q: "SHOW WARNINGS", kind: sqlscan.KindShow, flags: sqlscan.FlagDiagnostics},
	{q: "show errors limit 1", kind: sqlscan.KindShow, flags: sqlscan.FlagDiagnostics},
	{q: "SHOW COUNT(*) WARNINGS", kind: sqlscan.KindShow, flags: sqlscan.FlagDiagnostics},
	{q: "SHOW COUNT ( * ) ERRORS", kind: sqlscan.KindShow, flags: sqlscan.FlagDiagnostics},
	{q: "GET DIAGNOSTICS @n = NUMBER", kind: sqlscan.KindOther, flags: sqlscan.FlagDiagnostics | sqlscan.FlagUserVar},
	{q: "GET CURRENT DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT", kind: sqlscan.KindOther, flags: sqlscan.FlagDiagnostics | sqlscan.FlagUserVar},
	{q: "get stacked diagnostics condition 1 x = RETURNED_SQLSTATE", kind: sqlscan.KindOther, flags: sqlscan.FlagDiagnostics},
	{q: "SELECT @@warning_count", kind: sqlscan.KindSelect, flags: sqlscan.FlagDiagnostics},
	{q: "SELECT @@session.error_count", kind: sqlscan.KindSelect, flags: sqlscan.FlagDiagnostics},
	{q: "SELECT @@LOCAL.Warning_Count", kind: sqlscan.KindSelect, flags: sqlscan.FlagDiagnostics},
	{q: "SHOW TABLES FROM warnings", kind: sqlscan.KindShow, flags: sqlscan.FlagFrom},
	{q: "SHOW VARIABLES LIKE 'warning_count'", kind: sqlscan.KindShow},
	{q: "SELECT warning_count FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "GET diagnostics_table", kind: sqlscan.KindOther},

	// FlagInsertIDVar.
	{q: "SET insert_id = 5", kind: sqlscan.KindSet, flags: sqlscan.FlagInsertIDVar},
	{q: "SET SESSION insert_id=5", kind: sqlscan.KindSet, flags: sqlscan.FlagInsertIDVar},
	{q: "SET @@insert_id=5", kind: sqlscan.KindSet, flags: sqlscan.FlagInsertIDVar},
	{q: "SET @@session.last_insert_id = 5", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet},
	{q: "SET sql_mode='', identity=7", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet},
	{q: "SET @x=1, insert_id=7", kind: sqlscan.KindSet, flags: sqlscan.FlagInsertIDVar | sqlscan.FlagUserVar},
	{q: "SET `insert_id` = 1", kind: sqlscan.KindSet, flags: sqlscan.FlagInsertIDVar},
	{q: "SELECT @@identity", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDRead},
	{q: "UPDATE t SET insert_id=5", kind: sqlscan.KindUpdate},
	{q: "SELECT insert_id FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SET sql_mode = insert_id", kind: sqlscan.KindSet},
	{q: "SET x = IF(a, b, insert_id)", kind: sqlscan.KindSet},
	{q: "SET STATEMENT max_statement_time=1 FOR SELECT a, insert_id FROM t", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagFrom},
	{q: "SELECT v FROM t WHERE id = 1 FOR UPDATE NOWAIT", kind: sqlscan.KindSelect, flags: sqlscan.FlagStatementTimeout | sqlscan.FlagFrom},
	{q: "select v from t for update wait 3", kind: sqlscan.KindSelect, flags: sqlscan.FlagStatementTimeout | sqlscan.FlagFrom},
	{q: "LOCK TABLES t WRITE WAIT 5", kind: sqlscan.KindLock, flags: sqlscan.FlagLockTables | sqlscan.FlagStatementTimeout},
	{q: "SELECT wait FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT wait, 3 FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},

	// FlagSessionTrackVar.
	{q: "SET session_track_schema=OFF", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SET SESSION session_track_state_change = 0", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SET @@session.session_track_system_variables=''", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SET @@SESSION_TRACK_GTIDS=OFF_POS", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SET GLOBAL session_track_schema=OFF", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SET autocommit=1, session_track_schema=OFF", kind: sqlscan.KindSet, flags: sqlscan.FlagSessionTrackVar},
	{q: "SELECT @@session_track_schema", kind: sqlscan.KindSelect},
	{q: "SET x = 'session_track_schema'", kind: sqlscan.KindSet},

	// FlagSequence.
	{q: "SELECT NEXTVAL(s)", kind: sqlscan.KindSelect, flags: sqlscan.FlagSequence},
	{q: "SELECT lastval(s)", kind: sqlscan.KindSelect, flags: sqlscan.FlagSequence},
	{q: "SELECT SETVAL(s, 10)", kind: sqlscan.KindSelect, flags: sqlscan.FlagSequence},
	{q: "SELECT NEXT VALUE FOR s", kind: sqlscan.KindSelect, flags: sqlscan.FlagSequence},
	{q: "select previous /* c */ value for s", kind: sqlscan.KindSelect, flags: sqlscan.FlagSequence},
	{q: "INSERT INTO t VALUES (NEXT VALUE FOR s1)", kind: sqlscan.KindInsert, flags: sqlscan.FlagSequence},
	{q: "SELECT next, value FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT 'NEXT VALUE FOR s'", kind: sqlscan.KindSelect},
	{q: "SELECT nextval FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},

	// FlagKillUnsupported (more in TestKill).
	{q: "KILL USER bob", kind: sqlscan.KindKill, flags: sqlscan.FlagKillUnsupported},

	// FlagRole.
	{q: "SET ROLE admin", kind: sqlscan.KindSet, flags: sqlscan.FlagRole},
	{q: "set role none", kind: sqlscan.KindSet, flags: sqlscan.FlagRole},
	{q: "SET DEFAULT ROLE admin FOR bob", kind: sqlscan.KindSet},
	{q: "SET x = 'role'", kind: sqlscan.KindSet},

	// FlagSetTransaction through @@ without a scope.
	{q: "SET @@tx_isolation = 'READ-COMMITTED'", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "set @@TX_READ_ONLY=1", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET @@transaction_read_only = 0", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET autocommit=0, @@`tx_isolation`='SERIALIZABLE'", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction},
	{q: "SET @@session.tx_isolation = 'READ-COMMITTED'", kind: sqlscan.KindSet},
	{q: "SET @@LOCAL.transaction_isolation = 'READ-COMMITTED'", kind: sqlscan.KindSet},
	{q: "SET @@global.tx_read_only = 1", kind: sqlscan.KindSet},
	{q: "SET tx_isolation = 'READ-COMMITTED'", kind: sqlscan.KindSet},
	{q: "SET SESSION transaction_read_only = 1", kind: sqlscan.KindSet},
	{q: "SELECT @@tx_isolation", kind: sqlscan.KindSelect},
	{q: "SET x = @@tx_isolation", kind: sqlscan.KindSet},

	// The insert id flags.
	{q: "SELECT @@insert_id", kind: sqlscan.KindSelect},
	{q: "SELECT @@session.insert_id", kind: sqlscan.KindSelect},
	{q: "SET last_insert_id = 5", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet},
	{q: "SET @@identity=3", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet},
	{q: "SET SESSION identity = 3, insert_id = 4", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet | sqlscan.FlagInsertIDVar},
	{q: "SELECT @@last_insert_id", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDRead},
	{q: "SELECT @@LOCAL.identity + 1", kind: sqlscan.KindSelect, flags: sqlscan.FlagLastInsertIDRead},
	{q: "SET x = @@last_insert_id", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDRead},
	{q: "SET @@last_insert_id = @@identity", kind: sqlscan.KindSet, flags: sqlscan.FlagLastInsertIDSet | sqlscan.FlagLastInsertIDRead},

	// FlagConnectionID.
	{q: "SELECT CONNECTION_ID()", kind: sqlscan.KindSelect, flags: sqlscan.FlagConnectionID},
	{q: "DO connection_id ( )", kind: sqlscan.KindDo, flags: sqlscan.FlagConnectionID},
	{q: "SELECT `CONNECTION_ID`()", kind: sqlscan.KindSelect, flags: sqlscan.FlagConnectionID},
	{q: "SELECT @@pseudo_thread_id, @@session.PSEUDO_THREAD_ID", kind: sqlscan.KindSelect, flags: sqlscan.FlagConnectionID},
	{q: "SET pseudo_thread_id = 5", kind: sqlscan.KindSet},
	{q: "SELECT db.connection_id()", kind: sqlscan.KindSelect},
	{q: "SELECT connection_id", kind: sqlscan.KindSelect},

	// FlagRelease / FlagNoRelease.
	{q: "COMMIT RELEASE", kind: sqlscan.KindCommit, flags: sqlscan.FlagRelease},
	{q: "commit work and no chain release", kind: sqlscan.KindCommit, flags: sqlscan.FlagRelease},
	{q: "ROLLBACK AND CHAIN RELEASE", kind: sqlscan.KindRollback, flags: sqlscan.FlagRelease},
	{q: "COMMIT NO RELEASE", kind: sqlscan.KindCommit, flags: sqlscan.FlagNoRelease},
	{q: "ROLLBACK WORK AND NO CHAIN NO RELEASE", kind: sqlscan.KindRollback, flags: sqlscan.FlagNoRelease},
	{q: "COMMIT /* RELEASE */", kind: sqlscan.KindCommit},
	{q: "ROLLBACK TO SAVEPOINT s", kind: sqlscan.KindRollback},
	{q: "ROLLBACK WORK TO `release`", kind: sqlscan.KindRollback},
	{q: "RELEASE SAVEPOINT s", kind: sqlscan.KindRelease},
	{q: "SELECT 1; COMMIT RELEASE", kind: sqlscan.KindSelect, multi: true},

	// FlagFrom.
	{q: "SELECT 1 FROM DUAL", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "select a from t join u using (a)", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "UPDATE t JOIN u ON t.a = u.a SET t.b = 1", kind: sqlscan.KindUpdate, flags: sqlscan.FlagFrom},
	{q: "SELECT 'FROM', `join`, t.from /* FROM */ -- JOIN", kind: sqlscan.KindSelect},
	{q: "SELECT 1; SELECT * FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom, multi: true},

	// SET STATEMENT: the list is scoped, the statement after FOR is scanned as one.
	{q: "SET STATEMENT max_statement_time=10 FOR LOCK TABLES t READ", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagLockTables},
	{q: "SET STATEMENT max_statement_time=10 FOR SELECT GET_LOCK('a', 0)", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagGetLock},
	{q: "SET STATEMENT a=1, insert_id=2, b=(SELECT 1 FOR UPDATE) FOR SELECT 1", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement},
	{q: "SET STATEMENT session_track_schema=0 FOR SELECT 1", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagSessionTrackVar},
	{q: "SET STATEMENT a=1 FOR SET @@tx_isolation='SERIALIZABLE', insert_id=1", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagSetTransaction | sqlscan.FlagInsertIDVar},
	{q: "SET STATEMENT a=1 FOR SET STATEMENT b=2 FOR CREATE TEMPORARY TABLE t (a int)", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagTempTable},
	{q: "SET STATEMENT a=1 FOR COMMIT RELEASE", kind: sqlscan.KindSet, flags: sqlscan.FlagSetStatement | sqlscan.FlagRelease},
	{q: "SET PASSWORD FOR bob = PASSWORD('x')", kind: sqlscan.KindSet},

	// Identifiers that start with digits, numbers, and literals with a prefix.
	{q: "SELECT 1e5, 1.5e-3, .5, 0x1F, 0b101, 1abc, 0x1g FROM t", kind: sqlscan.KindSelect, flags: sqlscan.FlagFrom},
	{q: "SELECT 1get_lock('a', 1)", kind: sqlscan.KindSelect},
	{q: "SELECT N'@x', X'41', b'1', _utf8mb4'@y'", kind: sqlscan.KindSelect},

	// Multi, and flags from statements after the first.
	{q: "SELECT 1;", kind: sqlscan.KindSelect},
	{q: "SELECT 1; ", kind: sqlscan.KindSelect},
	{q: "SELECT 1; -- c", kind: sqlscan.KindSelect},
	{q: "SELECT 1;;", kind: sqlscan.KindSelect},
	{q: "SELECT 1; /* x */ ; # y\n", kind: sqlscan.KindSelect},
	{q: "SELECT 1 -- ;SELECT 2", kind: sqlscan.KindSelect},
	{q: "SELECT ';'", kind: sqlscan.KindSelect},
	{q: `SELECT ";"`, kind: sqlscan.KindSelect},
	{q: "SELECT `;`", kind: sqlscan.KindSelect},
	{q: "SELECT 1;SELECT 2", kind: sqlscan.KindSelect, multi: true},
	{q: "SELECT 1; /*! SELECT 2 */", kind: sqlscan.KindSelect, multi: true},
	{q: "SELECT 1; SET @x=1", kind: sqlscan.KindSelect, flags: sqlscan.FlagUserVar, multi: true},
	{q: "SELECT 1; LOCK TABLES t READ", kind: sqlscan.KindSelect, flags: sqlscan.FlagLockTables, multi: true},
	{q: "select get_lock; ('a', 1)", kind: sqlscan.KindSelect, multi: true},
	{q: "SET NAMES utf8; SET TRANSACTION READ ONLY", kind: sqlscan.KindSet, flags: sqlscan.FlagSetTransaction, multi: true},
}

func TestScan(t *testing.T) {
	for _, c := range scanCases {
		got := sqlscan.Scan([]byte(c.q))
		if got.Kind != c.kind || got.Flags != c.flags || got.Multi != c.multi {
			t.Errorf("Scan(%q) = kind %v flags %v multi %v; want kind %v flags %v multi %v",
				c.q, got.Kind, got.Flags, got.Multi, c.kind, c.flags, c.multi)
		}
	}
}

// TestScanCoverage keeps the table honest: every Kind and every Flag has a case.
func TestScanCoverage(t *testing.T) {
	kinds := map[sqlscan.Kind]bool{}
	var flags sqlscan.Flags
	for _, c := range scanCases {
		kinds[c.kind] = true
		flags |= c.flags
	}
	for k := sqlscan.KindOther; k <= sqlscan.KindRelease; k++ {
		if !kinds[k] {
			t.Errorf("no case of %v", k)
		}
	}
	for f := sqlscan.Flags(1); f <= sqlscan.FlagFrom; f <<= 1 {
		if flags&f == 0 {
			t.Errorf("no case of %v", f)
		}
	}
}

func TestKill(t *testing.T) {
	cases := []struct {
		q           string
		id          uint64
		query       bool
		unsupported bool
	}{
		{q: "KILL 5", id: 5},
		{q: "kill query 7", id: 7, query: true},
		{q: "KILL CONNECTION 9", id: 9},
		{q: "KILL HARD QUERY 3", id: 3, query: true},
		{q: "kill soft connection 4", id: 4},
		{q: "KILL SOFT 4", id: 4},
		{q: "KILL 5;", id: 5},
		{q: "KILL /* c */ 5 /* c */ ;  ", id: 5},
		{q: "/*!KILL 5*/", id: 5},
		{q: "KILL 18446744073709551615", id: 18446744073709551615},
		{q: "KILL 0"},
		{q: "KILL QUERY ID 3", query: true, unsupported: true},
		{q: "KILL USER bob", unsupported: true},
		{q: "KILL CONNECTION USER bob", unsupported: true},
		{q: "KILL HARD QUERY USER bob", query: true, unsupported: true},
		{q: "KILL @x", unsupported: true},
		{q: "KILL 5+1", unsupported: true},
		{q: "KILL 5 6", unsupported: true},
		{q: "KILL 0x5", unsupported: true},
		{q: "KILL 5.0", unsupported: true},
		{q: "KILL '5'", unsupported: true},
		{q: "KILL (5)", unsupported: true},
		{q: "KILL 18446744073709551616", unsupported: true},
		{q: "KILL 99999999999999999999999", unsupported: true},
		{q: "KILL", unsupported: true},
		{q: "KILL QUERY", query: true, unsupported: true},
		{q: "KILL HARD HARD 5", unsupported: true},
		{q: "KILL CONNECTION QUERY 5", unsupported: true},
		{q: "KILL 5; KILL 6", id: 5, unsupported: true},
	}
	for _, c := range cases {
		got := sqlscan.Scan([]byte(c.q))
		unsupported := got.Flags&sqlscan.FlagKillUnsupported != 0
		if got.Kind != sqlscan.KindKill || got.KillID != c.id || got.KillQuery != c.query || unsupported != c.unsupported {
			t.Errorf("Scan(%q) = kind %v id %d query %v flags %v; want kill id %d query %v unsupported %v",
				c.q, got.Kind, got.KillID, got.KillQuery, got.Flags, c.id, c.query, c.unsupported)
		}
	}

	// A KILL after the first statement would reach the backend with a proxy id.
	got := sqlscan.Scan([]byte("SELECT 1; KILL 5"))
	if got.Kind != sqlscan.KindSelect || got.KillID != 0 || got.Flags != sqlscan.FlagKillUnsupported || !got.Multi {
		t.Errorf("later KILL: got %+v", got)
	}
	if got := sqlscan.Scan([]byte("SELECT 5")); got.KillID != 0 || got.KillQuery {
		t.Errorf("SELECT 5: got %+v", got)
	}
}

func TestLocal(t *testing.T) {
	cases := []struct {
		q    string
		want sqlscan.Local
		expr string
	}{
		{"SELECT CONNECTION_ID()", sqlscan.LocalConnectionID, "CONNECTION_ID()"},
		{"select  Connection_Id( ) ;", sqlscan.LocalConnectionID, "Connection_Id( )"},
		{"SELECT LAST_INSERT_ID()", sqlscan.LocalLastInsertID, "LAST_INSERT_ID()"},
		{"select last_insert_id\t(\t)", sqlscan.LocalLastInsertID, "last_insert_id\t(\t)"},
		{"SELECT ROW_COUNT();", sqlscan.LocalRowCount, "ROW_COUNT()"},
		{"\n\tSELECT\n\tconnection_id(\n)\n;\r\n", sqlscan.LocalConnectionID, "connection_id(\n)"},
		{"SELECT FOUND_ROWS()", sqlscan.LocalFoundRows, "FOUND_ROWS()"},
		{"select @@warning_count", sqlscan.LocalWarningCount, "@@warning_count"},
		{"SELECT @@SESSION.error_count;", sqlscan.LocalErrorCount, "@@SESSION.error_count"},
		{"SELECT @@local.warning_count", sqlscan.LocalWarningCount, "@@local.warning_count"},
		// An alias with AS names the column, as on the server.
		{"SELECT CONNECTION_ID() AS id", sqlscan.LocalConnectionID, "id"},
		{"SELECT FOUND_ROWS() as `total rows`;", sqlscan.LocalFoundRows, "total rows"},
		{"select @@warning_count AS w", sqlscan.LocalWarningCount, "w"},
	}
	for _, c := range cases {
		got := sqlscan.Scan([]byte(c.q))
		if got.Local != c.want || string(got.LocalExpr) != c.expr || got.Kind != sqlscan.KindSelect || got.Multi {
			t.Errorf("Scan(%q) = local %v expr %q kind %v multi %v; want %v %q",
				c.q, got.Local, got.LocalExpr, got.Kind, got.Multi, c.want, c.expr)
		}
		if cap(got.LocalExpr) != len(got.LocalExpr) {
			t.Errorf("Scan(%q): LocalExpr has spare capacity, an append would overwrite the query", c.q)
		}
	}

	misses := []string{
		"SELECT CONNECTION_ID() AS `a``b`",
		"SELECT CONNECTION_ID() AS id, 1",
		"SELECT CONNECTION_ID() AS",
		"SELECT CONNECTION_ID() id",
		"SELECT CONNECTION_ID() FROM DUAL",
		"SELECT CONNECTION_ID(), 1",
		"SELECT 1, CONNECTION_ID()",
		"SELECT CONNECTION_ID() /* c */",
		"SELECT /* c */ CONNECTION_ID()",
		"/* c */ SELECT CONNECTION_ID()",
		"SELECT CONNECTION_ID() -- c",
		"SELECT CONNECTION_ID()#",
		"SELECT CONNECTION_ID();;",
		"SELECT CONNECTION_ID() ; ;",
		"SELECT CONNECTION_ID(); SELECT 1",
		"SELECT CONNECTION_ID() ;x",
		"SELECT CONNECTION_ID(1)",
		"SELECT LAST_INSERT_ID(5)",
		"SELECT CONNECTION_ID",
		"SELECT CONNECTION_ID(",
		"SELECT CONNECTION_ID)",
		"SELECT CONNECTION_IDX()",
		"SELECTCONNECTION_ID()",
		"SELECT `CONNECTION_ID`()",
		"SELECT (CONNECTION_ID())",
		"(SELECT CONNECTION_ID())",
		"SELECT db.CONNECTION_ID()",
		"SELECT CONNECTION_ID()\x00",
		"SELECT CONNECTION_ID() INTO @x",
		"SELECT SQL_NO_CACHE CONNECTION_ID()",
		"SELECT FOUND_ROWS(1)",
		"SELECT @@warning_count + 0",
		"SELECT @@global.warning_count",
		"SELECT @warning_count",
		"SELECT @@warning_counts",
		"SHOW WARNINGS LIMIT",
		"SHOW WARNINGS LIMIT 1,",
		"SHOW WARNINGS x",
		"SHOW WARNINGS LIMIT 99999999999999999999",
		"SHOW COUNT(*) WARNINGS LIMIT 1",
		"SHOW COUNT(1) WARNINGS",
		"SHOW WARNINGSX",
		"SHOW FULL WARNINGS",
		"/*!SELECT CONNECTION_ID()*/",
		"DO CONNECTION_ID()",
		"SELECT",
		"",
	}
	for _, q := range misses {
		if got := sqlscan.Scan([]byte(q)); got.Local != sqlscan.LocalNone || got.LocalExpr != nil {
			t.Errorf("Scan(%q) = local %v expr %q; want none", q, got.Local, got.LocalExpr)
		}
	}
}

func TestLocalShow(t *testing.T) {
	all := uint64(math.MaxUint64)
	cases := []struct {
		q             string
		want          sqlscan.Local
		offset, count uint64
	}{
		{"SHOW WARNINGS", sqlscan.LocalShowWarnings, 0, all},
		{"show warnings;", sqlscan.LocalShowWarnings, 0, all},
		{"SHOW WARNINGS LIMIT 5", sqlscan.LocalShowWarnings, 0, 5},
		{"SHOW ERRORS LIMIT 2, 3", sqlscan.LocalShowErrors, 2, 3},
		{"SHOW COUNT(*) WARNINGS", sqlscan.LocalCountWarnings, 0, all},
		{"show count ( * ) errors ;", sqlscan.LocalCountErrors, 0, all},
	}
	for _, c := range cases {
		got := sqlscan.Scan([]byte(c.q))
		if got.Local != c.want || got.LimitOffset != c.offset || got.LimitCount != c.count ||
			got.Kind != sqlscan.KindShow || got.LocalExpr != nil || got.Flags&sqlscan.FlagDiagnostics == 0 {
			t.Errorf("Scan(%q) = %+v; want %v offset %d count %d", c.q, got, c.want, c.offset, c.count)
		}
	}
}

func TestFirstKeyword(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SELECT 1", "SELECT"},
		{"  /* c */ (select 1)", "select"},
		{"-- c\nUSE db", "USE"},
		{"/*!40101 SET x=1 */", "SET"},
		{"sbtest1.id", "sbtest1"},
	}
	for _, c := range cases {
		if got := sqlscan.FirstKeyword([]byte(c.q)); string(got) != c.want {
			t.Errorf("FirstKeyword(%q) = %q; want %q", c.q, got, c.want)
		}
	}
	for _, q := range []string{"", "  ", "-- c", "'x'", "42", "@x", ";SELECT 1", "`select`"} {
		if got := sqlscan.FirstKeyword([]byte(q)); got != nil {
			t.Errorf("FirstKeyword(%q) = %q; want nil", q, got)
		}
	}
}

func TestStrings(t *testing.T) {
	if got := (sqlscan.FlagUserVar | sqlscan.FlagGetLock).String(); got != "UserVar|GetLock" {
		t.Errorf("flags String = %q", got)
	}
	if got := sqlscan.Flags(0).String(); got != "none" {
		t.Errorf("zero flags String = %q", got)
	}
	if got := (sqlscan.FlagXA | 1<<31).String(); got != "XA|0x80000000" {
		t.Errorf("unknown flag String = %q", got)
	}
	seen := map[string]sqlscan.Kind{}
	for k := sqlscan.KindOther; k <= sqlscan.KindRelease; k++ {
		s := k.String()
		if prev, dup := seen[s]; dup || s == "" {
			t.Errorf("Kind %d String %q (also %d)", k, s, prev)
		}
		seen[s] = k
	}
	if got := sqlscan.Kind(200).String(); got != "kind(200)" {
		t.Errorf("unknown kind String = %q", got)
	}
	if got := sqlscan.LocalRowCount.String(); got != "row_count" {
		t.Errorf("local String = %q", got)
	}
}

func TestStateful(t *testing.T) {
	for f := sqlscan.Flags(1); f <= sqlscan.FlagFrom; f <<= 1 {
		want := false
		switch f {
		case sqlscan.FlagUserVar, sqlscan.FlagTempTable, sqlscan.FlagGetLock, sqlscan.FlagSQLPrepare,
			sqlscan.FlagLastInsertIDArg, sqlscan.FlagInsertIDVar, sqlscan.FlagHandler, sqlscan.FlagSequence:
			want = true
		}
		if got := f.Stateful(); got != want {
			t.Errorf("%v.Stateful() = %v; want %v", f, got, want)
		}
	}
	if !sqlscan.Scan([]byte("SELECT 1; SELECT @x")).Flags.Stateful() {
		t.Error("user variable in a later statement is not stateful")
	}
	if sqlscan.Scan([]byte("SELECT LAST_INSERT_ID()")).Flags.Stateful() {
		t.Error("reading LAST_INSERT_ID() is stateful")
	}
}

func TestScanDoesNotAllocate(t *testing.T) {
	for _, c := range scanCases {
		q := []byte(c.q)
		if n := testing.AllocsPerRun(10, func() { sqlscan.Scan(q) }); n != 0 {
			t.Errorf("Scan(%q) allocates %v times", c.q, n)
		}
	}
}

func TestSetTargets(t *testing.T) {
	cases := []struct{ q, want string }{
		{"SET sql_mode = 'ANSI'", "sql_mode"},
		{"set session innodb_lock_wait_timeout=5, `time_zone` = '+01:00'", "innodb_lock_wait_timeout,time_zone"},
		{"SET @@session.wait_timeout = 10, @@global.max_connections = 5", "wait_timeout"},
		{"SET @@innodb_strict_mode = 0", "innodb_strict_mode"},
		{"SET GLOBAL a = 1, b = 2, SESSION c = 3", "c"},
		{"SET @x = 1, autocommit = 0", "autocommit"},
		{"SET NAMES utf8mb4", ""},
		{"SET CHARACTER SET latin1", ""},
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", ""},
		{"SET a = (SELECT 1), b = f(1, 2)", "a,b"},
		{"SET a = 1; SET b = 2", "a"},
		{"SELECT 1", ""},
	}
	for _, c := range cases {
		var got []string
		sqlscan.SetTargets([]byte(c.q), func(name []byte) { got = append(got, string(name)) })
		if strings.Join(got, ",") != c.want {
			t.Errorf("SetTargets(%q) = %q, want %q", c.q, strings.Join(got, ","), c.want)
		}
	}
}
