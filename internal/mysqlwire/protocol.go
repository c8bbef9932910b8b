package mysqlwire

// The protocol's numbers that more than one package needs: capability
// flags, command bytes and the bytes of the authentication exchange. The
// packet headers and status flags are in packets.go, column types in
// stmt.go.

// Capability flags (CLIENT_*): the low 32 bits that the server's greeting
// offers and the client's handshake response asks for.
const (
	// ClientLongPassword is CLIENT_LONG_PASSWORD to MySQL, which ignores
	// it, and CLIENT_MYSQL to MariaDB: a client that leaves it out may ask
	// for MariaDB's extended capabilities (MariaDBClient*).
	ClientLongPassword  uint32 = 0x00000001
	ClientFoundRows     uint32 = 0x00000002
	ClientLongFlag      uint32 = 0x00000004
	ClientConnectWithDB uint32 = 0x00000008
	// ClientCompress is CLIENT_COMPRESS: zlib (NegotiatedCompression).
	ClientCompress         uint32 = 0x00000020
	ClientLocalFiles       uint32 = 0x00000080
	ClientIgnoreSpace      uint32 = 0x00000100
	ClientProtocol41       uint32 = 0x00000200
	ClientInteractive      uint32 = 0x00000400
	ClientSSL              uint32 = 0x00000800
	ClientTransactions     uint32 = 0x00002000
	ClientSecureConnection uint32 = 0x00008000
	ClientMultiStatements  uint32 = 0x00010000
	ClientMultiResults     uint32 = 0x00020000
	ClientPSMultiResults   uint32 = 0x00040000
	ClientPluginAuth       uint32 = 0x00080000
	ClientConnectAttrs     uint32 = 0x00100000
	// ClientPluginAuthLenenc is CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA.
	ClientPluginAuthLenenc uint32 = 0x00200000
	ClientSessionTrack     uint32 = 0x00800000
	ClientDeprecateEOF     uint32 = 0x01000000
	// ClientZstdCompressionAlgorithm is CLIENT_ZSTD_COMPRESSION_ALGORITHM
	// (MySQL 8.0.18+): zstd, with a level byte at the end of the
	// handshake response.
	ClientZstdCompressionAlgorithm uint32 = 0x04000000
	ClientQueryAttributes          uint32 = 0x08000000
)

// MariaDB's extended capability flags (MARIADB_CLIENT_*, bits 32 and up of
// its 64-bit capabilities), as bits of the 32-bit word the greeting and
// the handshake response carry them in when CLIENT_MYSQL is clear.
const (
	MariaDBClientStmtBulkOperations uint32 = 1 << 2
	MariaDBClientExtendedMetadata   uint32 = 1 << 3
	// MariaDBClientCacheMetadata lets the server leave out the column
	// definitions of a prepared statement's result when they have not
	// changed since the last execution.
	MariaDBClientCacheMetadata uint32 = 1 << 4
)

// Command bytes (COM_*): the first byte of a command packet.
const (
	ComSleep            = 0x00
	ComQuit             = 0x01
	ComInitDB           = 0x02
	ComQuery            = 0x03
	ComFieldList        = 0x04
	ComCreateDB         = 0x05
	ComDropDB           = 0x06
	ComRefresh          = 0x07
	ComShutdown         = 0x08
	ComStatistics       = 0x09
	ComProcessInfo      = 0x0a
	ComConnect          = 0x0b
	ComProcessKill      = 0x0c
	ComDebug            = 0x0d
	ComPing             = 0x0e
	ComTime             = 0x0f
	ComDelayedInsert    = 0x10
	ComChangeUser       = 0x11
	ComBinlogDump       = 0x12
	ComTableDump        = 0x13
	ComConnectOut       = 0x14
	ComRegisterSlave    = 0x15
	ComStmtPrepare      = 0x16
	ComStmtExecute      = 0x17
	ComStmtSendLongData = 0x18
	ComStmtClose        = 0x19
	ComStmtReset        = 0x1a
	ComSetOption        = 0x1b
	ComStmtFetch        = 0x1c
	ComDaemon           = 0x1d
	ComBinlogDumpGTID   = 0x1e
	ComResetConnection  = 0x1f
	ComStmtBulkExecute  = 0xfa // MariaDB
)

// First bytes of the packets of the authentication exchange, besides OK
// and ERR.
const (
	// AuthMoreDataHeader opens AuthMoreData: data of the authentication
	// plugin.
	AuthMoreDataHeader = 0x01
	// AuthSwitchHeader opens AuthSwitchRequest (the EOF byte, told apart
	// by the phase).
	AuthSwitchHeader = 0xfe
)

// caching_sha2_password's one-byte messages. The server sends the last two
// in AuthMoreData; the client sends the request for the public key alone.
const (
	SHA2RequestPublicKey = 0x02
	SHA2FastAuthOK       = 0x03
	SHA2PerformFullAuth  = 0x04
)

// Authentication plugins, by the names the greeting, AuthSwitchRequest and
// the handshake response carry.
const (
	AuthNativePassword      = "mysql_native_password"
	AuthCachingSHA2Password = "caching_sha2_password"
	AuthSHA256Password      = "sha256_password"
	AuthClearPassword       = "mysql_clear_password"
	// AuthEd25519 is the client side of MariaDB's ed25519 plugin.
	AuthEd25519 = "client_ed25519"
)

// Server error codes (ER_*) that tpproxy reacts to or sends.
const (
	ErConCount                    = 1040 // ER_CON_COUNT_ERROR: too many connections
	ErHandshake                   = 1043 // ER_HANDSHAKE_ERROR
	ErAccessDenied                = 1045 // ER_ACCESS_DENIED_ERROR
	ErNoDB                        = 1046 // ER_NO_DB_ERROR
	ErUnknownCom                  = 1047 // ER_UNKNOWN_COM_ERROR
	ErBadDB                       = 1049 // ER_BAD_DB_ERROR
	ErServerShutdown              = 1053 // ER_SERVER_SHUTDOWN
	ErParse                       = 1064 // ER_PARSE_ERROR
	ErNoSuchThread                = 1094 // ER_NO_SUCH_THREAD
	ErKillDenied                  = 1095 // ER_KILL_DENIED_ERROR
	ErUnknown                     = 1105 // ER_UNKNOWN_ERROR
	ErHostIsBlocked               = 1129 // ER_HOST_IS_BLOCKED
	ErNotAllowedCommand           = 1148 // ER_NOT_ALLOWED_COMMAND
	ErNetPacketTooLarge           = 1153 // ER_NET_PACKET_TOO_LARGE
	ErNetPacketsOutOfOrder        = 1156 // ER_NET_PACKETS_OUT_OF_ORDER
	ErWrongArguments              = 1210 // ER_WRONG_ARGUMENTS
	ErSpecificAccessDenied        = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	ErNotSupportedYet             = 1235 // ER_NOT_SUPPORTED_YET
	ErIncorrectGlobalLocalVar     = 1238 // ER_INCORRECT_GLOBAL_LOCAL_VAR
	ErUnknownStmtHandler          = 1243 // ER_UNKNOWN_STMT_HANDLER
	ErUnsupportedPS               = 1295 // ER_UNSUPPORTED_PS
	ErQueryInterrupted            = 1317 // ER_QUERY_INTERRUPTED
	ErStmtHasNoOpenCursor         = 1421 // ER_STMT_HAS_NO_OPEN_CURSOR
	ErMaxPreparedStmtCountReached = 1461 // ER_MAX_PREPARED_STMT_COUNT_REACHED
	ErNeedReprepare               = 1615 // ER_NEED_REPREPARE
	ErAccessDeniedNoPassword      = 1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
	ErConnectionKilled            = 1927 // ER_CONNECTION_KILLED (MariaDB)
	ErSecureTransportRequired     = 3159 // ER_SECURE_TRANSPORT_REQUIRED (MySQL)
	ErClientInteractionTimeout    = 4031 // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
)
