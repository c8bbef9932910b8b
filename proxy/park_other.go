//go:build !unix

package proxy

import "syscall"

// parkOS: sessions park on unix systems only.
const parkOS = false

// waitReadable is never called here (canPark is false).
func waitReadable(syscall.RawConn) {}

// quietSocket is never called here (sessions do not park).
func quietSocket(syscall.RawConn) bool { return false }
