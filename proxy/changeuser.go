package proxy

import (
	"context"
)

// changeUser serves COM_CHANGE_USER: log in again as another (or the same)
// user, then start over as a fresh session. As on MariaDB, a failed login
// leaves the session as it was, logged in as before.
func (s *Session) changeUser(ctx context.Context, p []byte) (quit bool, err error) {
	req, err := parseChangeUser(p, s.caps)
	if err != nil {
		return false, s.writeErr(errUnknownCommand)
	}
	prev := s.user
	s.user = req.user
	s.log = nil
	plugin := req.plugin
	if plugin == "" {
		plugin = pluginNative
	}
	// The client scrambled with the greeting's salt; it gets the same salt
	// again if it has to switch plugins.
	acct, lerr := s.srv.authenticate(ctx, &s.clientConn, s.id, s.user, plugin, req.auth)
	if lerr != nil {
		s.user = prev
		s.log = nil
		return false, s.writeErr(lerr)
	}
	role := s.state.Role
	s.unpinForReset()
	s.state.Account = acct
	if req.collation != 0 {
		s.collationID = req.collation
		s.collation = s.srv.chars.lookup(ctx, s.srv.pool, req.collation)
	}
	s.initState(req.db, s.caps, s.extCaps)
	// MariaDB keeps the active role across COM_CHANGE_USER (10.11).
	s.keepRole(role)
	if req.db != "" {
		if err := s.checkSchema(ctx, &s.task); err != nil {
			s.initState("", s.caps, s.extCaps)
			s.keepRole(role)
			return false, s.writeErr(err)
		}
	}
	return false, s.writeOK()
}
