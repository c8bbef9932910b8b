package mysqlclient

import (
	"unsafe"

	"github.com/tpproxy/tpproxy/internal/mysqlwire"
)

// maxInPlace is the largest command payload built in the resident write
// buffer; a larger one is written through to the socket so that the buffer
// never grows.
const maxInPlace = writeBufSize - mysqlwire.HeaderSize

// Exec sends query as a text statement (COM_QUERY) and reads its whole
// response, discarding rows. It returns the number of rows read over all
// result sets of the response (0 for statements answered with OK), and
// follows SERVER_MORE_RESULTS_EXISTS through multi-result responses (CALL,
// multi-statements). A server error is returned as *mysqlwire.Error and
// leaves the connection usable; rows counts what came before it.
func (c *Conn) Exec(query []byte) (rows int, err error) {
	if c.broken.Load() {
		return 0, c.brokenErr()
	}
	if err := c.writeCommand(mysqlwire.ComQuery, query); err != nil {
		return 0, err
	}
	return c.readResult()
}

// ExecString is Exec for a string, without converting it to []byte.
func (c *Conn) ExecString(query string) (rows int, err error) {
	if c.broken.Load() {
		return 0, c.brokenErr()
	}
	if err := c.writeCommandString(mysqlwire.ComQuery, query); err != nil {
		return 0, err
	}
	return c.readResult()
}

// Ping checks the connection with COM_PING.
func (c *Conn) Ping() error {
	if c.broken.Load() {
		return c.brokenErr()
	}
	if err := c.writeCommandString(mysqlwire.ComPing, ""); err != nil {
		return err
	}
	p, err := c.readPacket()
	if err != nil {
		return err
	}
	switch p[0] {
	case mysqlwire.OKHeader:
		return c.endResponse()
	case mysqlwire.ERRHeader:
		return c.serverError(p)
	}
	return c.protocolError("unexpected answer to COM_PING", p)
}

// writeCommand sends a command byte followed by arg as one packet.
func (c *Conn) writeCommand(cmd byte, arg []byte) error {
	c.w.SetSeq(0)
	if len(arg) < maxInPlace {
		c.w.Begin()
		c.w.AppendByte(cmd)
		c.w.AppendBytes(arg)
		_ = c.w.End() // fails only at 16 MiB
	} else {
		c.cmd[0] = cmd
		if err := c.w.WritePacketParts(c.cmd[:], arg, nil); err != nil {
			return c.fail(err)
		}
	}
	return c.flush()
}

// writeCommandString is writeCommand for a string argument.
func (c *Conn) writeCommandString(cmd byte, arg string) error {
	if len(arg) < maxInPlace {
		c.w.SetSeq(0)
		c.w.Begin()
		c.w.AppendByte(cmd)
		c.w.AppendString(arg)
		_ = c.w.End() // fails only at 16 MiB
		return c.flush()
	}
	// Too large for the buffer: the writer copies it straight to the
	// socket and never writes to it, so the string's bytes can be lent.
	return c.writeCommand(cmd, unsafe.Slice(unsafe.StringData(arg), len(arg)))
}

// readResult reads a complete response to COM_QUERY or COM_STMT_EXECUTE:
// OK, ERR, or result sets (column count, definitions, EOF, rows, EOF) for
// as long as the server flags more results. Text and binary rows are only
// counted, so one reader serves both protocols.
func (c *Conn) readResult() (rows int, err error) {
	for {
		p, err := c.readPacket()
		if err != nil {
			return rows, err
		}
		switch p[0] {
		case mysqlwire.OKHeader:
			status, ok := okStatus(p)
			if !ok {
				return rows, c.protocolError("malformed OK packet", p)
			}
			if status&mysqlwire.StatusMoreResults != 0 {
				continue
			}
			return rows, c.endResponse()
		case mysqlwire.ERRHeader:
			return rows, c.serverError(p)
		case mysqlwire.LocalInfileHeader:
			// CLIENT_LOCAL_FILES is never asked for.
			return rows, c.protocolError("LOCAL INFILE request", p)
		}
		cols, isNull, n := mysqlwire.LenEncInt(p)
		meta := true
		if c.cacheMeta && n > 0 && n == len(p)-1 {
			meta = p[n] != 0
			n++
		}
		if n == 0 || n != len(p) || isNull || cols == 0 {
			return rows, c.protocolError("bad column count", p)
		}
		if !meta {
			// Definitions left out (unchanged since the last execution);
			// the EOF that ends them still comes.
			cols = 0
		}
		if err := c.skipDefinitions(cols); err != nil {
			return rows, err
		}
		more, err := c.skipRows(&rows)
		if err != nil || !more {
			return rows, err
		}
	}
}

// skipDefinitions reads n column (or parameter) definitions and the EOF
// packet after them.
func (c *Conn) skipDefinitions(n uint64) error {
	for ; n > 0; n-- {
		p, err := c.readPacket()
		if err != nil {
			return err
		}
		if p[0] == mysqlwire.ERRHeader || mysqlwire.IsEOF(p) {
			return c.protocolError("column definitions cut short", p)
		}
	}
	p, err := c.readPacket()
	if err != nil {
		return err
	}
	if !mysqlwire.IsEOF(p) {
		return c.protocolError("column definitions not ended by EOF", p)
	}
	return nil
}

// skipRows reads the rows of a result set up to its EOF, counting them in
// *rows, and reports whether another result set follows. An ERR packet
// ends the response.
func (c *Conn) skipRows(rows *int) (more bool, err error) {
	for {
		p, err := c.readPacket()
		if err != nil {
			return false, err
		}
		if mysqlwire.IsEOF(p) {
			_, status := mysqlwire.EOFStatus(p)
			if status&mysqlwire.StatusMoreResults != 0 {
				return true, nil
			}
			return false, c.endResponse()
		}
		if p[0] == mysqlwire.ERRHeader {
			return false, c.serverError(p)
		}
		*rows++
	}
}

// okStatus returns the status flags of an OK packet (header, affected
// rows, insert id, status), ignoring what follows, whose layout depends on
// capabilities.
func okStatus(p []byte) (uint16, bool) {
	p = p[1:]
	for range 2 {
		_, isNull, n := mysqlwire.LenEncInt(p)
		if n == 0 || isNull {
			return 0, false
		}
		p = p[n:]
	}
	if len(p) < 2 {
		return 0, false
	}
	return uint16(p[0]) | uint16(p[1])<<8, true
}
