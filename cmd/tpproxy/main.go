// Command tpproxy is the MySQL-protocol proxy daemon: it puts a
// server-style thread pool in front of a MySQL or MariaDB server.
//
//	tpproxy serve --config FILE         run the proxy
//	tpproxy check-config --config FILE  validate a configuration file
//	tpproxy version                     print the build version
package main

import (
	"context"
	"os"
)

// Set at link time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc123".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Environ(), buildInfo{version: version, commit: commit}))
}
