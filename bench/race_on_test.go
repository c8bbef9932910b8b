//go:build race

package bench

// raceEnabled: the race detector is on. It taxes the driver's counters
// that all of a step's clients share, so one Run of 24 clients is slower
// than three of 8 in the same process, and TPS comparisons loosen.
const raceEnabled = true
