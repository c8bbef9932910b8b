//go:build !unix

package pool

import "net"

type liveness struct{}

func (l *liveness) init(net.Conn) {}

func (c *Conn) alive() bool { return !c.broken }
