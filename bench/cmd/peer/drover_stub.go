//go:build !drover

package main

// newDrover is the stand-in used while the drover engine (the root package)
// has not landed: build with -tags drover to use drover.go instead.
func newDrover(config) (impl, error) {
	return nil, errNotAvailable
}
