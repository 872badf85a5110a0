//go:build !linux

package main

import "io"

// isTerminal reports false off Linux: progress is then never drawn.
func isTerminal(w io.Writer) bool { return false }
