package redistest

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestServerDiesWithItsProcess: a test binary that exits without stopping
// its server (os.Exit here; a panic, a timeout or a package without Main
// alike) does not leave the redis-server running. Before, every `make test`
// left one per such package.
func TestServerDiesWithItsProcess(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") == "1" {
		s, err := Start()
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("addr=" + s.Addr + "\n")
		os.Exit(0) // no Stop
	}
	if runtime.GOOS != "linux" {
		t.Skip("the kernel kills an orphaned server on Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithItsProcess$")
	cmd.Env = append(os.Environ(), "REDISTEST_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	var addr string
	for _, line := range strings.Split(string(out), "\n") {
		if a, ok := strings.CutPrefix(line, "addr="); ok {
			addr = a
		}
	}
	if addr == "" {
		t.Fatalf("child printed no address: %s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return // gone
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the redis-server at %s still accepts connections 10 s after its test binary exited", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
