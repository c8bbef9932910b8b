package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/tpproxy/tpproxy/internal/config"
	"github.com/tpproxy/tpproxy/proxy"
)

// newHashLookup opens the auth_lookup account's connections to the backend
// (at most two, opened when first needed; they live as long as the
// process) and returns the lookup, nil when auth_lookup is off.
func newHashLookup(cfg *config.Config) (proxy.HashLookup, error) {
	al := cfg.AuthLookup
	if al.User == "" {
		return nil, nil
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd = al.User, al.Password
	mc.Net, mc.Addr = "tcp", cfg.Backend.Addr
	if strings.HasPrefix(cfg.Backend.Addr, "/") {
		mc.Net = "unix"
	}
	mc.Timeout = cfg.Backend.ConnectTimeout
	switch cfg.Backend.TLS.Mode {
	case config.TLSRequired:
		tc, err := cfg.Backend.TLSConfig()
		if err != nil {
			return nil, err
		}
		mc.TLS = tc
	case config.TLSPreferred:
		mc.TLSConfig = "preferred"
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("auth_lookup: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(cfg.AuthLookup.TTL)
	query := al.Query
	lookup := func(ctx context.Context, user string) ([]byte, bool, error) {
		var auth sql.NullString
		err := db.QueryRowContext(ctx, query, user).Scan(&auth)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("auth_lookup of %q: %w", user, err)
		}
		s := auth.String
		if s != "" && !strings.HasPrefix(s, "*") {
			// Another plugin's string (caching_sha2_password's $A$...):
			// not a hash this proxy can check.
			return nil, false, nil
		}
		hash, err := config.User{User: user, Password: s}.NativeHash()
		if err != nil {
			return nil, false, fmt.Errorf("auth_lookup of %q: %w", user, err)
		}
		return hash, true, nil
	}
	return lookup, nil
}
