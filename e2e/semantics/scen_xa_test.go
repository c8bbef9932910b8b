package semantics

// Class 8: XA. A prepared XA transaction outlives its session: a new
// session finds it with XA RECOVER and commits or rolls it back. The
// connection it ran on must be clean for whoever uses it next. (MariaDB
// 10.11 itself breaks a connection that gets COM_RESET_CONNECTION or
// COM_CHANGE_USER with a prepared XA transaction: later writes fail with
// ERR 1031 and a metadata lock stays behind for good. So there is no
// scenario of the subject resetting itself with one: the server cannot be
// the oracle there; but a proxy must never do that to a backend whose
// session left a prepared transaction.)

const (
	xaPrepare = "XA START '{{db}}' ;; INSERT INTO t (v) VALUES (77) ;; XA END '{{db}}' ;; XA PREPARE '{{db}}'"
	xaCount   = "SELECT COUNT(*) FROM t WHERE v = 77"
	// obsWrite is an observer's InnoDB write: it must not fail with
	// ERR 1399/1031/1792 because of XA state left on a connection.
	obsWrite = "INSERT INTO t2 (v) VALUES (3) ;; " + trxProbe
)

func xaScenarios() []*scenario {
	c := "xa"
	return []*scenario{
		{id: "xa01", class: c, desc: "XA PREPARE, the socket drops; a new session recovers and commits it; observers write",
			steps: steps("S: "+xaPrepare, "S: !abort", "S: !gone", "W: XA RECOVER", rep("O", 3, obsWrite), "W: XA COMMIT '{{db}}'",
				"W: "+xaCount+" ;; XA RECOVER", rep("O", 2, obsWrite))},
		{id: "xa02", class: c, desc: "XA PREPARE, COM_QUIT; a new session recovers and commits it",
			steps: steps("S: "+xaPrepare, "S: !quit", "S: !gone", "W: XA RECOVER", rep("O", 3, obsWrite), "W: XA COMMIT '{{db}}'", "W: "+xaCount)},
		{id: "xa03", class: c, desc: "XA PREPARE, the socket drops; a new session rolls it back",
			steps: steps("S: "+xaPrepare, "S: !abort", "S: !gone", "W: XA RECOVER", "W: XA ROLLBACK '{{db}}'", "W: "+xaCount+" ;; XA RECOVER",
				rep("O", 3, obsWrite))},
		{id: "xa04", class: c, desc: "XA COMMIT ... ONE PHASE",
			steps: steps("S: XA START '{{db}}' ;; INSERT INTO t (v) VALUES (77) ;; XA END '{{db}}' ;; XA COMMIT '{{db}}' ONE PHASE",
				"S: "+xaCount, rep("O", 3, obsWrite), "S: "+rwTrx)},
		{id: "xa05", class: c, desc: "the subject prepares and commits its own XA transaction, then runs a normal one",
			steps: steps("S: "+xaPrepare, "S: XA RECOVER", "S: XA COMMIT '{{db}}'", "S: "+xaCount, "S: "+rwTrx, rep("O", 2, obsWrite))},
		{id: "xa06", class: c, desc: "XA START and the socket drops before XA END: rolled back, nothing to recover",
			steps: steps("S: XA START '{{db}}' ;; INSERT INTO t (v) VALUES (77)", "S: !abort", "S: !gone", "W: XA RECOVER", "W: "+xaCount,
				rep("O", 3, obsWrite))},
		{id: "xa07", class: c, desc: "statements in the IDLE state (after XA END) and a BEGIN there",
			steps: steps("S: XA START '{{db}}' ;; INSERT INTO t (v) VALUES (77) ;; XA END '{{db}}'", "S: SELECT 1", "S: START TRANSACTION",
				"S: "+insT, rep("O", 2, obsWrite), "S: XA ROLLBACK '{{db}}'", "S: "+xaCount)},
		{id: "xa08", class: c, desc: "XA PREPARE, the socket drops, a new session commits; the subject reconnects and works normally",
			steps: steps("S: "+xaPrepare, "S: !abort", "S: !gone", "W: XA COMMIT '{{db}}'", "S: !connect", "S: "+rwTrx, "S: "+xaCount,
				rep("S", 2, "SELECT @@in_transaction ;; "+trxProbe), rep("O", 2, obsWrite))},
		{id: "xa09", class: c, desc: "after XA PREPARE the session cannot run other transactional statements",
			steps: steps("S: "+xaPrepare, "S: "+insT, "S: BEGIN", "S: SELECT @@in_transaction", rep("O", 2, obsWrite), "S: XA ROLLBACK '{{db}}'",
				"S: "+rwTrx)},
		{id: "xa10", class: c, desc: "the observer tries to commit the subject's prepared transaction while the subject is connected",
			steps: steps("S: "+xaPrepare, "O: XA COMMIT '{{db}}'", "O: "+trxProbe, "S: XA COMMIT '{{db}}'", "S: "+xaCount)},
		{id: "xa11", class: c, desc: "two prepared XA transactions of two sessions that both drop: both recoverable, both rolled back",
			steps: steps("S: "+xaPrepare, "W: XA START 'sem_w_{{db}}' ;; INSERT INTO t (v) VALUES (78) ;; XA END 'sem_w_{{db}}' ;; XA PREPARE 'sem_w_{{db}}'",
				"S: !abort", "W: !abort", "S: !gone", "W: !gone", "R: XA RECOVER", rep("O", 2, obsWrite), "R: XA ROLLBACK '{{db}}' ;; XA ROLLBACK 'sem_w_{{db}}' ;; XA RECOVER",
				"R: SELECT COUNT(*) FROM t WHERE v >= 77", rep("O", 2, obsWrite))},
	}
}
