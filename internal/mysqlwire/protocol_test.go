package mysqlwire

import (
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// The protocol's numbers, checked against go-mysql's independent
// definitions.
func TestProtocolConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"ClientLongPassword", uint64(ClientLongPassword), uint64(gomysql.CLIENT_LONG_PASSWORD)},
		{"ClientFoundRows", uint64(ClientFoundRows), uint64(gomysql.CLIENT_FOUND_ROWS)},
		{"ClientLongFlag", uint64(ClientLongFlag), uint64(gomysql.CLIENT_LONG_FLAG)},
		{"ClientConnectWithDB", uint64(ClientConnectWithDB), uint64(gomysql.CLIENT_CONNECT_WITH_DB)},
		{"ClientCompress", uint64(ClientCompress), uint64(gomysql.CLIENT_COMPRESS)},
		{"ClientLocalFiles", uint64(ClientLocalFiles), uint64(gomysql.CLIENT_LOCAL_FILES)},
		{"ClientIgnoreSpace", uint64(ClientIgnoreSpace), uint64(gomysql.CLIENT_IGNORE_SPACE)},
		{"ClientProtocol41", uint64(ClientProtocol41), uint64(gomysql.CLIENT_PROTOCOL_41)},
		{"ClientInteractive", uint64(ClientInteractive), uint64(gomysql.CLIENT_INTERACTIVE)},
		{"ClientSSL", uint64(ClientSSL), uint64(gomysql.CLIENT_SSL)},
		{"ClientTransactions", uint64(ClientTransactions), uint64(gomysql.CLIENT_TRANSACTIONS)},
		{"ClientSecureConnection", uint64(ClientSecureConnection), uint64(gomysql.CLIENT_SECURE_CONNECTION)},
		{"ClientMultiStatements", uint64(ClientMultiStatements), uint64(gomysql.CLIENT_MULTI_STATEMENTS)},
		{"ClientMultiResults", uint64(ClientMultiResults), uint64(gomysql.CLIENT_MULTI_RESULTS)},
		{"ClientPSMultiResults", uint64(ClientPSMultiResults), uint64(gomysql.CLIENT_PS_MULTI_RESULTS)},
		{"ClientPluginAuth", uint64(ClientPluginAuth), uint64(gomysql.CLIENT_PLUGIN_AUTH)},
		{"ClientConnectAttrs", uint64(ClientConnectAttrs), uint64(gomysql.CLIENT_CONNECT_ATTRS)},
		{"ClientPluginAuthLenenc", uint64(ClientPluginAuthLenenc), uint64(gomysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA)},
		{"ClientSessionTrack", uint64(ClientSessionTrack), uint64(gomysql.CLIENT_SESSION_TRACK)},
		{"ClientDeprecateEOF", uint64(ClientDeprecateEOF), uint64(gomysql.CLIENT_DEPRECATE_EOF)},
		{"ClientZstdCompressionAlgorithm", uint64(ClientZstdCompressionAlgorithm), uint64(gomysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM)},
		{"ClientQueryAttributes", uint64(ClientQueryAttributes), uint64(gomysql.CLIENT_QUERY_ATTRIBUTES)},

		{"ComSleep", ComSleep, uint64(gomysql.COM_SLEEP)},
		{"ComQuit", ComQuit, uint64(gomysql.COM_QUIT)},
		{"ComInitDB", ComInitDB, uint64(gomysql.COM_INIT_DB)},
		{"ComQuery", ComQuery, uint64(gomysql.COM_QUERY)},
		{"ComFieldList", ComFieldList, uint64(gomysql.COM_FIELD_LIST)},
		{"ComCreateDB", ComCreateDB, uint64(gomysql.COM_CREATE_DB)},
		{"ComDropDB", ComDropDB, uint64(gomysql.COM_DROP_DB)},
		{"ComRefresh", ComRefresh, uint64(gomysql.COM_REFRESH)},
		{"ComShutdown", ComShutdown, uint64(gomysql.COM_SHUTDOWN)},
		{"ComStatistics", ComStatistics, uint64(gomysql.COM_STATISTICS)},
		{"ComProcessInfo", ComProcessInfo, uint64(gomysql.COM_PROCESS_INFO)},
		{"ComConnect", ComConnect, uint64(gomysql.COM_CONNECT)},
		{"ComProcessKill", ComProcessKill, uint64(gomysql.COM_PROCESS_KILL)},
		{"ComDebug", ComDebug, uint64(gomysql.COM_DEBUG)},
		{"ComPing", ComPing, uint64(gomysql.COM_PING)},
		{"ComTime", ComTime, uint64(gomysql.COM_TIME)},
		{"ComDelayedInsert", ComDelayedInsert, uint64(gomysql.COM_DELAYED_INSERT)},
		{"ComChangeUser", ComChangeUser, uint64(gomysql.COM_CHANGE_USER)},
		{"ComBinlogDump", ComBinlogDump, uint64(gomysql.COM_BINLOG_DUMP)},
		{"ComTableDump", ComTableDump, uint64(gomysql.COM_TABLE_DUMP)},
		{"ComConnectOut", ComConnectOut, uint64(gomysql.COM_CONNECT_OUT)},
		{"ComRegisterSlave", ComRegisterSlave, uint64(gomysql.COM_REGISTER_SLAVE)},
		{"ComStmtPrepare", ComStmtPrepare, uint64(gomysql.COM_STMT_PREPARE)},
		{"ComStmtExecute", ComStmtExecute, uint64(gomysql.COM_STMT_EXECUTE)},
		{"ComStmtSendLongData", ComStmtSendLongData, uint64(gomysql.COM_STMT_SEND_LONG_DATA)},
		{"ComStmtClose", ComStmtClose, uint64(gomysql.COM_STMT_CLOSE)},
		{"ComStmtReset", ComStmtReset, uint64(gomysql.COM_STMT_RESET)},
		{"ComSetOption", ComSetOption, uint64(gomysql.COM_SET_OPTION)},
		{"ComStmtFetch", ComStmtFetch, uint64(gomysql.COM_STMT_FETCH)},
		{"ComDaemon", ComDaemon, uint64(gomysql.COM_DAEMON)},
		{"ComBinlogDumpGTID", ComBinlogDumpGTID, uint64(gomysql.COM_BINLOG_DUMP_GTID)},
		{"ComResetConnection", ComResetConnection, uint64(gomysql.COM_RESET_CONNECTION)},

		{"SHA2FastAuthOK", SHA2FastAuthOK, uint64(gomysql.CACHE_SHA2_FAST_AUTH)},
		{"SHA2PerformFullAuth", SHA2PerformFullAuth, uint64(gomysql.CACHE_SHA2_FULL_AUTH)},
		{"AuthSwitchHeader", AuthSwitchHeader, uint64(gomysql.EOF_HEADER)},

		{"OKHeader", OKHeader, uint64(gomysql.OK_HEADER)},
		{"EOFHeader", EOFHeader, uint64(gomysql.EOF_HEADER)},
		{"ERRHeader", ERRHeader, uint64(gomysql.ERR_HEADER)},
		{"LocalInfileHeader", LocalInfileHeader, uint64(gomysql.LocalInFile_HEADER)},
		{"StatusInTrans", uint64(StatusInTrans), uint64(gomysql.SERVER_STATUS_IN_TRANS)},
		{"StatusAutocommit", uint64(StatusAutocommit), uint64(gomysql.SERVER_STATUS_AUTOCOMMIT)},
		{"StatusMoreResults", uint64(StatusMoreResults), uint64(gomysql.SERVER_MORE_RESULTS_EXISTS)},
		{"StatusCursorExists", uint64(StatusCursorExists), uint64(gomysql.SERVER_STATUS_CURSOR_EXISTS)},
		{"StatusLastRowSent", uint64(StatusLastRowSent), uint64(gomysql.SERVER_STATUS_LAST_ROW_SEND)},
		{"StatusNoBackslashEscapes", uint64(StatusNoBackslashEscapes), uint64(gomysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED)},
		{"StatusInTransReadonly", uint64(StatusInTransReadonly), uint64(gomysql.SERVER_STATUS_IN_TRANS_READONLY)},
		{"StatusSessionStateChanged", uint64(StatusSessionStateChanged), uint64(gomysql.SERVER_SESSION_STATE_CHANGED)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
