package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

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

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(string(fields[1])); ppid != pid {
			continue
		}
		child, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			return nil, fmt.Errorf("pgtest: read %s: %w", path, err)
		}
		out = append(out, child)
	}
	return out, nil
}
