package pgtest

import "syscall"

// sysProcAttr runs initdb and postgres as runAs (nil: as ourselves). The
// server gets its own process group, so a ^C in the terminal reaches only the
// test binary, which then stops the server in order; and a parent-death
// signal, so a test binary that dies without stopping it (killed by -timeout
// or SIGKILL) takes the server with it. Go sets the signal after switching
// user, so the kernel does not clear it.
func sysProcAttr(runAs *osUser, server bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if runAs != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(runAs.uid), Gid: uint32(runAs.gid)}
	}
	if server {
		attr.Pdeathsig = syscall.SIGQUIT
	}
	return attr
}
