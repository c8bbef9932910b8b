package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/tpproxy/tpproxy/internal/config"
)

// runServe runs the proxy until ctx is cancelled. It is wired to the proxy
// packages in a later step.
func runServe(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	_ = ctx
	_ = cfg
	_ = log
	return errors.New("serve: not wired yet")
}
