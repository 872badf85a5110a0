package main

import (
	"testing"

	"capacitylab/internal/bareroot"
)

// An https:// UPSTREAM is verified against the public roots the proxy
// embeds (main.go), the image having none: this runs the proxy's static
// build in a bare root as the image's user and verifies a public chain
// there (package bareroot).
func TestPublicRootsInBareImage(t *testing.T) {
	bareroot.CheckPublicRoots(t)
}
