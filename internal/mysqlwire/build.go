package mysqlwire

// Column flags used by packets the proxy builds itself.
const (
	FlagNotNull  uint16 = 0x0001
	FlagBinary   uint16 = 0x0080
	FlagUnsigned uint16 = 0x0020
)

// Column describes a column definition the proxy sends for result sets it
// answers itself.
type Column struct {
	Name     []byte
	Charset  uint16 // collation id; 63 (binary) for numbers
	Length   uint32
	Type     byte
	Flags    uint16
	Decimals byte
}

// WriteERR writes an ERR packet (protocol 4.1).
func (w *Writer) WriteERR(e *Error) error {
	w.Begin()
	w.AppendByte(ERRHeader)
	w.AppendUint16(e.Code)
	w.AppendByte('#')
	state := e.State
	if len(state) != 5 {
		state = "HY000"
	}
	w.AppendString(state)
	w.AppendString(e.Message)
	return w.End()
}

// WriteOK writes an OK packet in the layout of a connection without
// CLIENT_SESSION_TRACK: the info, when there is one, as a length-encoded
// string, which is what servers send and clients parse.
func (w *Writer) WriteOK(affected, insertID uint64, status, warnings uint16, info []byte) error {
	w.Begin()
	w.AppendByte(OKHeader)
	w.AppendLenEncInt(affected)
	w.AppendLenEncInt(insertID)
	w.AppendUint16(status)
	w.AppendUint16(warnings)
	if len(info) > 0 {
		w.AppendLenEncString(info)
	}
	return w.End()
}

// WriteOKTracked writes an OK packet to a client that negotiated
// CLIENT_SESSION_TRACK: the info string is length-encoded (and always
// present), followed by the session state information when status has
// SERVER_SESSION_STATE_CHANGED.
func (w *Writer) WriteOKTracked(affected, insertID uint64, status, warnings uint16, info, state []byte) error {
	w.Begin()
	w.AppendByte(OKHeader)
	w.AppendLenEncInt(affected)
	w.AppendLenEncInt(insertID)
	w.AppendUint16(status)
	w.AppendUint16(warnings)
	w.AppendLenEncString(info)
	if status&StatusSessionStateChanged != 0 {
		w.AppendLenEncString(state)
	}
	return w.End()
}

// AppendStateEntry appends one session state entry (type, then its data
// length-encoded) to b.
func AppendStateEntry(b []byte, typ byte, data []byte) []byte {
	b = append(b, typ)
	b = AppendLenEncInt(b, uint64(len(data)))
	return append(b, data...)
}

// WriteEOF writes an EOF packet.
func (w *Writer) WriteEOF(warnings, status uint16) error {
	w.Begin()
	w.AppendByte(EOFHeader)
	w.AppendUint16(warnings)
	w.AppendUint16(status)
	return w.End()
}

// WriteColumn writes a column definition (protocol 4.1) with an empty
// schema and table, as the server does for expressions.
func (w *Writer) WriteColumn(c Column) error {
	w.Begin()
	w.AppendLenEncString([]byte("def"))
	w.AppendByte(0) // schema
	w.AppendByte(0) // table
	w.AppendByte(0) // org_table
	w.AppendLenEncString(c.Name)
	w.AppendByte(0) // org_name
	if w.ExtMetadata {
		w.AppendByte(0) // no extended type information
	}
	w.AppendByte(0x0c)
	w.AppendUint16(c.Charset)
	w.AppendUint32(c.Length)
	w.AppendByte(c.Type)
	w.AppendUint16(c.Flags)
	w.AppendByte(c.Decimals)
	w.AppendUint16(0)
	return w.End()
}
