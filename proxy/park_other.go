//go:build !unix

package proxy

import "net"

// parkOS: sessions park on unix systems only.
const parkOS = false

// readable is never called here.
func readable(net.Conn) func() { return nil }
