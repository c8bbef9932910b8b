package operate

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/tpproxy/tpproxy/internal/proxytest"
)

// TestAuthLookup: a user the configuration does not list logs in with its
// server account's own password, read through auth_lookup, and runs as that
// account; after the password changes on the server, the old one is refused
// once the TTL has passed and the new one works.
func TestAuthLookup(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	if err := env.Server(t).Exec(ctx,
		"DROP USER IF EXISTS 'tp_lookup'@'%'", "DROP USER IF EXISTS 'lk_user'@'%'",
		"CREATE USER 'tp_lookup'@'%' IDENTIFIED BY 'lookup-pw'", "GRANT SELECT ON mysql.user TO 'tp_lookup'@'%'",
		"CREATE USER 'lk_user'@'%' IDENTIFIED BY 'pw1'", "GRANT SELECT ON "+proxytest.DB+".* TO 'lk_user'@'%'",
	); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Server(t).Exec(context.Background(), "DROP USER IF EXISTS 'tp_lookup'@'%'", "DROP USER IF EXISTS 'lk_user'@'%'")
	})
	s := defaults(t)
	s.Extra = "auth_lookup:\n  user: tp_lookup\n  password: lookup-pw\n  ttl: 1s\n"
	d := start(t, s)
	as := func(user, pw string) (string, error) {
		dsn := strings.Replace(d.dsn(), proxytest.User+":"+proxytest.Password+"@", user+":"+pw+"@", 1)
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var cu string
		err = db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&cu)
		return cu, err
	}
	if cu, err := as("lk_user", "pw1"); err != nil || cu != "lk_user@%" {
		t.Fatalf("lk_user with its server password: %q, %v", cu, err)
	}
	if _, err := as("lk_user", "wrong"); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Errorf("lk_user with a wrong password: %v, want ERROR 1045", err)
	}
	if _, err := as("nobody_here", "x"); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Errorf("an unknown user: %v, want ERROR 1045", err)
	}
	// The configured users are still checked against the file.
	if cu, err := as(proxytest.User, proxytest.Password); err != nil || cu == "" {
		t.Errorf("the configured user: %q, %v", cu, err)
	}

	if err := env.Server(t).Exec(ctx, "ALTER USER 'lk_user'@'%' IDENTIFIED BY 'pw2'"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the TTL
	if _, err := as("lk_user", "pw1"); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Errorf("lk_user with the old password after the TTL: %v, want ERROR 1045", err)
	}
	if cu, err := as("lk_user", "pw2"); err != nil || cu != "lk_user@%" {
		t.Errorf("lk_user with the new password: %q, %v", cu, err)
	}
}
