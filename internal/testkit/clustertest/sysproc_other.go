//go:build !linux

package clustertest

import "syscall"

// sysProcAttr puts a server in its own process group, so a ^C in the terminal
// reaches only the test binary, which then stops the servers in order.
// Outside Linux there is no parent-death signal: a test binary killed by
// -timeout leaves its servers running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
