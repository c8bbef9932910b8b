package proxy

import (
	"context"
)

// changeUser serves COM_CHANGE_USER: log in again as another (or the same)
// user, then start over as a fresh session. A failed login ends the
// connection, as on the server.
func (s *Session) changeUser(ctx context.Context, p []byte) (quit bool, err error) {
	req, err := parseChangeUser(p, s.caps)
	if err != nil {
		s.srv.stats.errors.Add(1)
		_ = s.w.WriteERR(sqlError(err))
		return true, nil
	}
	s.unpinForReset()
	s.user = req.user
	s.log = nil
	plugin := req.plugin
	if plugin == "" {
		plugin = pluginNative
	}
	// The client scrambled with the greeting's salt; a fresh one is used
	// if it has to switch plugins.
	if !s.authenticate(plugin, req.auth) {
		return true, nil
	}
	if req.collation != 0 {
		s.collation = s.srv.chars.lookup(ctx, s.srv.pool, req.collation)
	}
	s.initState(req.db)
	if req.db != "" {
		if err := s.checkSchema(ctx); err != nil {
			_ = s.writeErr(err)
			return true, nil
		}
	}
	return false, s.writeOK()
}
