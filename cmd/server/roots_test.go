package main

import (
	"testing"

	"capacitylab/internal/bareroot"
)

// The image is FROM scratch, without CA certificates; the server reaches
// an LTI platform's keys, token endpoint and score service over HTTPS,
// and every launch failed "x509: certificate signed by unknown
// authority". The server embeds the public roots (main.go); this runs its
// static build in a bare root as the image's user and verifies a public
// chain there (package bareroot).
func TestPublicRootsInBareImage(t *testing.T) {
	bareroot.CheckPublicRoots(t)
}
