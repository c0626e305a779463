package clustertest

import "syscall"

// sysProcAttr puts a server in its own process group, so a ^C in the terminal
// reaches only the test binary (which then stops the servers in order), and
// gives it a parent-death signal, so a test binary that dies without stopping
// it (killed by -timeout or SIGKILL) takes the server with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
