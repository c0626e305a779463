package redistest

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestStartNoticesAnotherServerOnItsPort: a server started on a port
// another redis-server already holds (FreePort's port taken between its
// probe and the bind, as parallel tests race for ports) is not taken for
// ready. It was: the other server answered the readiness PING, so two
// tests shared one server, and a test's SIGSTOP went to a process that had
// exited, pausing nothing (TestAPIWritesWhileRedisIsPaused got 200 where
// it wanted 503, TestUIActionWhileRedisIsPaused no toast, in one full
// dashboard run).
func TestStartNoticesAnotherServerOnItsPort(t *testing.T) {
	t.Parallel()
	first, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Stop)
	_, portText, err := net.SplitHostPort(first.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	second, err := startOn(bin, port, nil, 2*time.Second)
	if err == nil {
		second.Stop()
		t.Fatalf("a server on the taken port %d was taken for ready: the readiness check reached the other server", port)
	}
	t.Logf("refused as it should: %v", err)
	if err := first.waitReady(time.Second); err != nil {
		t.Fatalf("the first server: %v", err)
	}
}
