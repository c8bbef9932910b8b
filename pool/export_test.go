package pool

import "context"

// DialForBench dials one backend connection the way the pool does
// (handshake and session initialisation) and returns a func closing it.
func DialForBench(ctx context.Context, p *Pool) (func(), error) {
	c, err := p.dial(ctx, false, false)
	if err != nil {
		return nil, err
	}
	return c.close, nil
}

// InitSQL is the statement the pool initialises sessions with.
func InitSQL(p *Pool) string { return p.initSQL() }

// DefaultsSQL is the pool's read of the session defaults.
const DefaultsSQL = defaultsSQL
