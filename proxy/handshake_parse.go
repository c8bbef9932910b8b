package proxy

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// Capability flags the front end deals with, under the package's short
// names for mysqlwire's.
const (
	capLongPassword     = mysqlwire.ClientLongPassword
	capFoundRows        = mysqlwire.ClientFoundRows
	capLongFlag         = mysqlwire.ClientLongFlag
	capConnectWithDB    = mysqlwire.ClientConnectWithDB
	capLocalFiles       = mysqlwire.ClientLocalFiles
	capIgnoreSpace      = mysqlwire.ClientIgnoreSpace
	capProtocol41       = mysqlwire.ClientProtocol41
	capInteractive      = mysqlwire.ClientInteractive
	capSSL              = mysqlwire.ClientSSL
	capTransactions     = mysqlwire.ClientTransactions
	capSecureConnection = mysqlwire.ClientSecureConnection
	capMultiStatements  = mysqlwire.ClientMultiStatements
	capMultiResults     = mysqlwire.ClientMultiResults
	capPSMultiResults   = mysqlwire.ClientPSMultiResults
	capPluginAuth       = mysqlwire.ClientPluginAuth
	capConnectAttrs     = mysqlwire.ClientConnectAttrs
	capPluginAuthLenenc = mysqlwire.ClientPluginAuthLenenc
	capSessionTrack     = mysqlwire.ClientSessionTrack
	capCompress         = mysqlwire.ClientCompress
	capZstd             = mysqlwire.ClientZstdCompressionAlgorithm
)

// errBadHandshake is wrapped by parse errors of handshake-phase packets.
var errBadHandshake = errors.New("bad handshake")

// errHandshakeBudget ends a handshake that found no slot of the
// handshakes' CPU budget before its timeout (authWork).
var errHandshakeBudget = errors.New("handshake: no slot of the handshake CPU budget before the timeout")

// handshakeResponse is a client's HandshakeResponse41 (or SSLRequest when
// sslRequest is set).
type handshakeResponse struct {
	caps       uint32
	extCaps    uint32 // MariaDB's extended capabilities (CLIENT_MYSQL clear)
	maxPacket  uint32
	collation  uint8
	sslRequest bool
	user       string
	auth       []byte
	db         string
	plugin     string
	attrs      map[string]string
	zstdLevel  int
}

// parseHandshakeResponse decodes HandshakeResponse41 or an SSLRequest.
// It never panics on malformed input.
func parseHandshakeResponse(p []byte) (handshakeResponse, error) {
	var r handshakeResponse
	if len(p) < 32 {
		return r, fmt.Errorf("%w: response too short (%d bytes)", errBadHandshake, len(p))
	}
	r.caps = binary.LittleEndian.Uint32(p)
	if r.caps&capProtocol41 == 0 {
		return r, fmt.Errorf("%w: client does not speak protocol 4.1", errBadHandshake)
	}
	r.maxPacket = binary.LittleEndian.Uint32(p[4:])
	r.collation = p[8]
	if r.caps&capLongPassword == 0 {
		r.extCaps = binary.LittleEndian.Uint32(p[28:])
	}
	p = p[32:]
	if len(p) == 0 && r.caps&capSSL != 0 {
		r.sslRequest = true
		return r, nil
	}
	user, p, err := mysqlwire.NullTerminated(p)
	if err != nil {
		return r, fmt.Errorf("%w: user name", errBadHandshake)
	}
	r.user = string(user)
	switch {
	case r.caps&capPluginAuthLenenc != 0:
		auth, n, err := mysqlwire.LenEncString(p)
		if err != nil {
			return r, fmt.Errorf("%w: auth response", errBadHandshake)
		}
		r.auth, p = auth, p[n:]
	case r.caps&capSecureConnection != 0:
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return r, fmt.Errorf("%w: auth response", errBadHandshake)
		}
		n := int(p[0])
		r.auth, p = p[1:1+n], p[1+n:]
	default:
		auth, rest, err := mysqlwire.NullTerminated(p)
		if err != nil {
			return r, fmt.Errorf("%w: auth response", errBadHandshake)
		}
		r.auth, p = auth, rest
	}
	if r.caps&capConnectWithDB != 0 && len(p) > 0 {
		db, rest, err := mysqlwire.NullTerminated(p)
		if err != nil {
			// Some clients end the packet with the schema unterminated.
			db, rest = p, nil
		}
		r.db, p = string(db), rest
	}
	if r.caps&capPluginAuth != 0 && len(p) > 0 {
		plugin, rest, err := mysqlwire.NullTerminated(p)
		if err != nil {
			plugin, rest = p, nil
		}
		r.plugin, p = string(plugin), rest
	}
	if r.caps&capConnectAttrs != 0 && len(p) > 0 {
		attrs, err := parseAttrs(p)
		if err != nil {
			return r, err
		}
		r.attrs = attrs
		n, _, ln := mysqlwire.LenEncInt(p)
		if ln > 0 && uint64(len(p)-ln) >= n {
			p = p[ln+int(n):]
		}
	}
	if r.caps&capZstd != 0 && len(p) > 0 {
		// MySQL 8.0.18+: the zstd compression level follows.
		r.zstdLevel = int(p[0])
	}
	return r, nil
}

// parseAttrs decodes connection attributes (a length-prefixed list of
// key/value length-encoded strings).
func parseAttrs(p []byte) (map[string]string, error) {
	total, isNull, n := mysqlwire.LenEncInt(p)
	if n == 0 || isNull || total > uint64(len(p)-n) {
		return nil, fmt.Errorf("%w: connection attributes", errBadHandshake)
	}
	p = p[n : n+int(total)]
	attrs := make(map[string]string)
	for len(p) > 0 {
		k, n, err := mysqlwire.LenEncString(p)
		if err != nil {
			return nil, fmt.Errorf("%w: connection attributes", errBadHandshake)
		}
		p = p[n:]
		v, n, err := mysqlwire.LenEncString(p)
		if err != nil {
			return nil, fmt.Errorf("%w: connection attributes", errBadHandshake)
		}
		p = p[n:]
		if len(attrs) < 64 {
			attrs[string(k)] = string(v)
		}
	}
	return attrs, nil
}

// changeUser is a COM_CHANGE_USER request.
type changeUser struct {
	user      string
	auth      []byte
	db        string
	collation uint16
	plugin    string
	attrs     map[string]string
}

// parseChangeUser decodes COM_CHANGE_USER (payload after the command byte)
// for a client with capabilities caps. It never panics.
func parseChangeUser(p []byte, caps uint32) (changeUser, error) {
	var r changeUser
	user, p, err := mysqlwire.NullTerminated(p)
	if err != nil {
		return r, fmt.Errorf("%w: change user: user name", errBadHandshake)
	}
	r.user = string(user)
	if caps&capSecureConnection != 0 {
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return r, fmt.Errorf("%w: change user: auth response", errBadHandshake)
		}
		n := int(p[0])
		r.auth, p = p[1:1+n], p[1+n:]
	} else {
		auth, rest, err := mysqlwire.NullTerminated(p)
		if err != nil {
			return r, fmt.Errorf("%w: change user: auth response", errBadHandshake)
		}
		r.auth, p = auth, rest
	}
	db, p, err := mysqlwire.NullTerminated(p)
	if err != nil {
		return r, fmt.Errorf("%w: change user: schema", errBadHandshake)
	}
	r.db = string(db)
	if len(p) >= 2 {
		r.collation = binary.LittleEndian.Uint16(p)
		p = p[2:]
	}
	if caps&capPluginAuth != 0 && len(p) > 0 {
		plugin, rest, err := mysqlwire.NullTerminated(p)
		if err != nil {
			plugin, rest = p, nil
		}
		r.plugin, p = string(plugin), rest
	}
	if caps&capConnectAttrs != 0 && len(p) > 0 {
		attrs, err := parseAttrs(p)
		if err != nil {
			return r, err
		}
		r.attrs = attrs
	}
	return r, nil
}
