package mysqlclient

// WithInitialPlugin makes Connect answer the greeting as if it had named
// plugin, so that a real server asks for an auth switch.
func WithInitialPlugin(cfg Config, plugin string) Config {
	cfg.initialPlugin = plugin
	return cfg
}

// AppendExecute exposes the COM_STMT_EXECUTE encoder.
func AppendExecute(b []byte, s *Stmt, args []Arg) ([]byte, error) { return appendExecute(b, s, args) }

// SetBound marks s's last types as bound on the server, as a successful
// execute does.
func SetBound(s *Stmt) { s.bound = true }
