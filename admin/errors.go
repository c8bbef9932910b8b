package admin

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tpproxy/tpproxy/proxy"
	"github.com/tpproxy/tpproxy/scheduler"
)

// ErrBadConfig marks an invalid Config.
var ErrBadConfig = errors.New("admin: invalid config")

// Classes of statement errors. Each becomes one MySQL error code in
// toMySQL; the message the client sees is built with the error.
var (
	// errUnsupported: a statement the admin port does not know.
	errUnsupported = errors.New("admin: unsupported statement")
	// errSyntax: a known statement written in a way it does not accept.
	errSyntax = errors.New("admin: syntax error")
	// errEmpty: nothing but whitespace, comments and semicolons.
	errEmpty = errors.New("admin: empty query")
	// errUnknownVariable: a system variable the admin port does not have.
	errUnknownVariable = errors.New("admin: unknown system variable")
	// errReadOnly: SET of a variable that only reports a value.
	errReadOnly = errors.New("admin: read-only variable")
	// errGlobalOnly: SET SESSION of a global variable.
	errGlobalOnly = errors.New("admin: global variable set without GLOBAL")
	// errNotSession: @@session.x of a global variable.
	errNotSession = errors.New("admin: global variable read as a session variable")
	// errWrongValue: a value out of range or not one of the allowed words.
	errWrongValue = errors.New("admin: wrong value for variable")
	// errWrongType: a string for a number, a fraction for an integer...
	errWrongType = errors.New("admin: wrong type for variable")
	// errUnknownColumn: a column the table does not have.
	errUnknownColumn = errors.New("admin: unknown column")
	// errUnknownTable: a table information_schema does not have here.
	errUnknownTable = errors.New("admin: unknown table")
	// errNoSuchThread: KILL of an id no client session has.
	errNoSuchThread = errors.New("admin: no such session")
	// errPrepared: the binary protocol, which the admin port does not speak.
	errPrepared = errors.New("admin: prepared statements are not supported")
	// errBadDB: a database other than information_schema.
	errBadDB = errors.New("admin: unknown database")
	// errNoSuchTable: a table of another schema.
	errNoSuchTable = errors.New("admin: no such table")
	// errAmbiguous: a column name more than one table of a join has.
	errAmbiguous = errors.New("admin: ambiguous column")
	// errNoFunction: a function neither SQLite nor the admin port has.
	errNoFunction = errors.New("admin: no such function")
	// errParamCount: a function called with the wrong number of arguments.
	errParamCount = errors.New("admin: wrong parameter count")
	// errGroupFunc: an aggregate where none may be (SUM(COUNT(*))).
	errGroupFunc = errors.New("admin: invalid use of group function")
	// errOperand: a row or a many-column subquery where one value goes.
	errOperand = errors.New("admin: operand should contain one column")
	// errColumnCount: UNION of selects with different column counts.
	errColumnCount = errors.New("admin: different number of columns")
	// errTimeout: a query ran longer than queryTimeout.
	errTimeout = errors.New("admin: query timeout")
	// errInterrupted: the client went away during a query.
	errInterrupted = errors.New("admin: query interrupted")
	// errResources: the engine's memory limit was reached.
	errResources = errors.New("admin: out of memory")
	// errTooBig: a result over maxResultBytes.
	errTooBig = errors.New("admin: result too big")
	// errUnknownCommand: a protocol command other than query, ping,
	// init_db, quit, set_option and reset_connection.
	errUnknownCommand = errors.New("admin: unknown command")
)

// unsupportedMsg lists what the admin port understands.
const unsupportedMsg = "tpproxy admin: unsupported statement; supported: SELECT (over the information_schema views: " +
	"THREAD_POOL_*, PROCESSLIST, TPPROXY_*, GLOBAL_VARIABLES, GLOBAL_STATUS), SHOW TABLES, SHOW COLUMNS, DESCRIBE, " +
	"SHOW VARIABLES, SHOW STATUS, SHOW PROCESSLIST, SET GLOBAL, FLUSH THREAD_POOL_STATS, FLUSH HOSTS, KILL"

// stmtError is an error with the text the client is to see.
type stmtError struct {
	kind error // one of the classes above
	msg  string
}

func (e *stmtError) Error() string { return e.msg }
func (e *stmtError) Unwrap() error { return e.kind }

func newErr(kind error, format string, args ...any) error {
	return &stmtError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func unsupported() error { return &stmtError{kind: errUnsupported, msg: unsupportedMsg} }

// syntaxError reports q as wrong from byte pos on.
func syntaxError(q string, pos int) error {
	near := q[min(pos, len(q)):]
	if len(near) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(near[cut]) {
			cut--
		}
		near = near[:cut]
	}
	line := 1 + strings.Count(q[:min(pos, len(q))], "\n")
	return newErr(errSyntax, "tpproxy admin: syntax error near '%s' at line %d", near, line)
}

func unknownVariable(name string) error {
	return newErr(errUnknownVariable, "Unknown system variable '%s'", name)
}

func readOnly(name string) error {
	return newErr(errReadOnly, "Variable '%s' is a read only variable", name)
}

func globalOnly(name string) error {
	return newErr(errGlobalOnly, "Variable '%s' is a GLOBAL variable and should be set with SET GLOBAL", name)
}

func notSession(name string) error {
	return newErr(errNotSession, "Variable '%s' is a GLOBAL variable", name)
}

func wrongValue(name, value string) error {
	return newErr(errWrongValue, "Variable '%s' can't be set to the value of '%s'", name, value)
}

func wrongType(name string) error {
	return newErr(errWrongType, "Incorrect argument type to variable '%s'", name)
}

func unknownColumn(name, clause string) error {
	return newErr(errUnknownColumn, "Unknown column '%s' in '%s'", name, clause)
}

func unknownTable(name, schema string) error {
	return newErr(errUnknownTable, "Unknown table '%s' in %s", name, schema)
}

func noSuchTable(schema, name string) error {
	return newErr(errNoSuchTable, "Table '%s.%s' doesn't exist", schema, name)
}

func noSuchThread(id string) error {
	return newErr(errNoSuchThread, "Unknown thread id: %s", id)
}

// errCodes maps the classes to MySQL error codes.
var errCodes = []struct {
	kind error
	code uint16
}{
	{errUnsupported, mysql.ER_PARSE_ERROR},
	{errSyntax, mysql.ER_PARSE_ERROR},
	{errEmpty, mysql.ER_EMPTY_QUERY},
	{errUnknownVariable, mysql.ER_UNKNOWN_SYSTEM_VARIABLE},
	{errReadOnly, mysql.ER_INCORRECT_GLOBAL_LOCAL_VAR},
	{errNotSession, mysql.ER_INCORRECT_GLOBAL_LOCAL_VAR},
	{errGlobalOnly, mysql.ER_GLOBAL_VARIABLE},
	{errWrongValue, mysql.ER_WRONG_VALUE_FOR_VAR},
	{errWrongType, mysql.ER_WRONG_TYPE_FOR_VAR},
	{errUnknownColumn, mysql.ER_BAD_FIELD_ERROR},
	{errUnknownTable, mysql.ER_UNKNOWN_TABLE},
	{errNoSuchTable, mysql.ER_NO_SUCH_TABLE},
	{errBadDB, mysql.ER_BAD_DB_ERROR},
	{errAmbiguous, mysql.ER_NON_UNIQ_ERROR},
	{errNoFunction, mysql.ER_SP_DOES_NOT_EXIST},
	{errParamCount, mysql.ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT},
	{errGroupFunc, mysql.ER_INVALID_GROUP_FUNC_USE},
	{errOperand, mysql.ER_OPERAND_COLUMNS},
	{errColumnCount, mysql.ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT},
	{errTimeout, erStatementTimeout},
	{errInterrupted, mysql.ER_QUERY_INTERRUPTED},
	{errResources, mysql.ER_OUT_OF_RESOURCES},
	{errTooBig, mysql.ER_OUT_OF_RESOURCES},
	{errNoSuchThread, mysql.ER_NO_SUCH_THREAD},
	{errPrepared, mysql.ER_UNSUPPORTED_PS},
	{errUnknownCommand, mysql.ER_UNKNOWN_COM_ERROR},
}

// toMySQL turns any error of a statement into the ERR packet the client
// gets. go-mysql writes only a *mysql.MyError as it is, so this is the one
// place that decides codes.
func toMySQL(err error) *mysql.MyError {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me
	}
	var se *stmtError
	if errors.As(err, &se) {
		for _, c := range errCodes {
			if errors.Is(se.kind, c.kind) {
				return mysql.NewError(c.code, se.msg)
			}
		}
	}
	switch {
	case errors.Is(err, proxy.ErrNoSuchSession):
		return mysql.NewError(mysql.ER_NO_SUCH_THREAD, "tpproxy admin: "+err.Error())
	case errors.Is(err, scheduler.ErrBadConfig):
		return mysql.NewError(mysql.ER_WRONG_VALUE_FOR_VAR, "tpproxy admin: "+err.Error())
	}
	return mysql.NewError(mysql.ER_UNKNOWN_ERROR, "tpproxy admin: "+err.Error())
}
