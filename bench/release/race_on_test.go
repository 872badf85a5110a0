//go:build race

package main

// raceEnabled: built with the race detector, which slows the generator
// and the lab several times over; TestBadReleaseOnTheLab then checks only
// what holds on any machine.
const raceEnabled = true
