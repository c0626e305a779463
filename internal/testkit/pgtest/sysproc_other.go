//go:build !linux

package pgtest

import (
	"errors"
	"syscall"
)

// sysProcAttr runs initdb and postgres as runAs (nil: as ourselves), in their
// own process group. Without Linux's parent-death signal, a test binary that
// is killed leaves its server running until someone stops it.
func sysProcAttr(runAs *osUser, _ bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if runAs != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(runAs.uid), Gid: uint32(runAs.gid)}
	}
	return attr
}

// childrenOf needs Linux's /proc.
func childrenOf(int) ([]int, error) {
	return nil, errors.New("pgtest: Server.Signal needs Linux")
}
