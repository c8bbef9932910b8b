package drivers

// knownProxy lists the driver/scenario pairs that differ through tpproxy
// today, each with the difference observed (direct vs proxy). A listed pair
// that still differs is logged; one that passes fails the test ("now passes:
// remove from knownProxy"), so the list is always the current work queue.
var knownProxy = map[string]string{
	// Compression is not negotiated with clients (README "Clients get the
	// classic protocol"). Drivers that check the server's capabilities fall
	// back to plain packets; mysqlnd compresses anyway.
	"node/compression":    "compression is negotiated and every query, the 1 MB result and the 1 MB insert agree; only SHOW SESSION STATUS LIKE 'Compression' differs (ON directly, OFF through the proxy): session status variables describe the backend connection, which tpproxy never compresses (README Known limits)",
	"mysqldb/compression": "compression is negotiated and every query, the 1 MB result and the 1 MB insert agree; only SHOW SESSION STATUS LIKE 'Compression' differs (ON directly, OFF through the proxy): session status variables describe the backend connection, which tpproxy never compresses (README Known limits)",
	"java/compression":    "compression is negotiated and every query, the 1 MB result and the 1 MB insert agree; only SHOW SESSION STATUS LIKE 'Compression' differs (ON directly, OFF through the proxy): session status variables describe the backend connection, which tpproxy never compresses (README Known limits)",
	"mysqli/compression":  "compression is negotiated and every query, the 1 MB result and the 1 MB insert agree; only SHOW SESSION STATUS LIKE 'Compression' differs (ON directly, OFF through the proxy): session status variables describe the backend connection, which tpproxy never compresses (README Known limits)",
	"pdo/compression":     "compression is negotiated and every query, the 1 MB result and the 1 MB insert agree; only SHOW SESSION STATUS LIKE 'Compression' differs (ON directly, OFF through the proxy): session status variables describe the backend connection, which tpproxy never compresses (README Known limits)",

	// CLIENT_IGNORE_SPACE from the handshake is not applied to the session.
	// Warnings of a server-side prepared statement.

	// 12 autocommit=0 sessions on a pool of 8: the first 8 pin every backend.

	// Prepared KILL (README: tpproxy error 1295).

	// MariaDB's extended type info (format=json) is not relayed.

	// MariaDB bulk execution (COM_STMT_BULK_EXECUTE) is not offered.
}
