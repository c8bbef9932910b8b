package proxy_test

import (
	"context"
	"database/sql"
	"testing"
)

func TestBasicQueryThroughProxy(t *testing.T) {
	px := env.StartProxy(t)
	db := px.Open(t)
	ctx := context.Background()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema); err != nil || schema.String != "tpproxy_test" {
		t.Fatalf("DATABASE() = %v, %v", schema, err)
	}
}
