//go:build race

package mysqlwire

// raceEnabled: the race detector slows the large payload tests tenfold;
// they keep their sizes up to 16 MiB + 1 under it.
const raceEnabled = true
