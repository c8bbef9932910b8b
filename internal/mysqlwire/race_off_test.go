//go:build !race

package mysqlwire

const raceEnabled = false
