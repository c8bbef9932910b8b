package mysqlclient

// WithInitialPlugin makes Connect answer the greeting as if it had named
// plugin, so that a real server asks for an auth switch.
func WithInitialPlugin(cfg Config, plugin string) Config {
	cfg.initialPlugin = plugin
	return cfg
}
