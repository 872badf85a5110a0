//go:build race

package main

// raceEnabled: built with the race detector, which slows the generator
// and the lab several times over; TestBadReleaseOnTheLab then checks its four
// shapes and skips the rest, saying so.
const raceEnabled = true
