package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemoProcessExitsCleanly runs `drover demo` as a real process (this test
// binary acts as drover, see TestMain) with no Redis reachable through PATH
// or the network, waits until it serves, and stops it with SIGTERM and with
// Ctrl-C (SIGINT): both must exit 0 (issue 2, acceptance 5).
func TestDemoProcessExitsCleanly(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "demo", "--dashboard", "127.0.0.1:0")
			cmd.Env = []string{"PATH=/nonexistent", "HOME=" + t.TempDir()}
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			cmd.Stderr = cmd.Stdout
			require.NoError(t, cmd.Start())
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var seen []string
			deadline := time.After(30 * time.Second)
		wait:
			for {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "demo exited early: %s", strings.Join(seen, "\n"))
					seen = append(seen, l)
					if strings.Contains(l, "completed job") {
						break wait
					}
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("demo did not complete a job in 30s: %s", strings.Join(seen, "\n"))
				}
			}
			require.Contains(t, strings.Join(seen, "\n"), "embedded Redis-compatible engine")
			require.Contains(t, strings.Join(seen, "\n"), "dashboard: http://127.0.0.1:")
			require.NoError(t, cmd.Process.Signal(sig))
			done := make(chan error, 1)
			go func() {
				for range lines { //nolint:revive // drain so the process never blocks on a full pipe
				}
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				require.NoError(t, err, "exit status after %s", sig)
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("demo did not exit within 20s of %s", sig)
			}
		})
	}
}
