//go:build !linux

package redistest

import "os/exec"

// dieWithParent has no portable equivalent outside Linux: there a server
// is stopped only by Stop or Main.
func dieWithParent(*exec.Cmd) {}
