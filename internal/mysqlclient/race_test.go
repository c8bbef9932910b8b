//go:build race

package mysqlclient_test

// raceEnabled: the race detector is on, which changes allocation counts.
const raceEnabled = true
