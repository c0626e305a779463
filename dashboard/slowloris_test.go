package dashboard_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// slowlorisChild, when set, makes TestSlowlorisServer serve a dashboard and
// print its URL: the server side of TestSlowloris, run in a child process
// whose open-file limit is 1024, as on a stock Linux box.
const slowlorisChild = "DROVER_SLOWLORIS_CHILD"

// TestSlowlorisServer is the child process of TestSlowloris.
func TestSlowlorisServer(t *testing.T) {
	if os.Getenv(slowlorisChild) == "" {
		t.Skip("the server side of TestSlowloris")
	}
	rdb, prefix := redistest.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	srv, err := dashboard.NewServer(ins, &dashboard.ServerOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	fmt.Printf("URL %s\n", srv.URL())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is done
	require.NoError(t, srv.Close(context.Background()))
}

// TestSlowloris is issue 15 item 4: 1,100 clients that send their headers
// or bodies a byte at a time, reconnecting when dropped, must not stop
// /healthz from answering on a server limited to 1024 open files.
func TestSlowloris(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("opens 1,100 connections")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -n 1024 && exec "$0" -test.run='^TestSlowlorisServer$' -test.count=1`, os.Args[0])
	cmd.Env = append(os.Environ(), slowlorisChild+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var base string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL "); ok {
			base = u
			break
		}
	}
	require.NotEmpty(t, base, "the child's URL")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")

	// The attack: half send a header a byte a second, half a login body.
	const attackers = 1100
	var open atomic.Int64
	var wg sync.WaitGroup
	attackCtx, stopAttack := context.WithCancel(ctx)
	for n := range attackers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attackCtx.Err() == nil {
				c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(attackCtx, "tcp", addr)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				open.Add(1)
				go func() { <-attackCtx.Done(); _ = c.Close() }()
				var head string
				if n%2 == 0 {
					head = "GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\n"
				} else {
					head = "POST /api/login HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
				}
				_, err = c.Write([]byte(head))
				for err == nil && attackCtx.Err() == nil {
					select {
					case <-attackCtx.Done():
					case <-time.After(time.Second):
					}
					_, err = c.Write([]byte("X"))
				}
				_ = c.Close()
				open.Add(-1)
			}
		}()
	}
	t.Cleanup(func() { stopAttack(); wg.Wait() })

	// Let the attack build up, then probe /healthz for 10 seconds.
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() < attackers && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d attacking connections open", open.Load())
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var failures []string
	probes := 0
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		probes++
		start := time.Now()
		resp, err := hc.Get(base + "healthz")
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failures = append(failures, resp.Status)
		}
		if d := time.Since(start); d > time.Second {
			failures = append(failures, "slow answer: "+d.String())
		}
	}
	t.Logf("%d probes, %d failed; %d attacking connections open at the end", probes, len(failures), open.Load())
	require.Empty(t, failures, "/healthz under attack")
}

// TestServerLimits: the standalone server bounds headers and bodies.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	srv, err := dashboard.NewServer(b.ins, &dashboard.ServerOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })

	req, err := http.NewRequest(http.MethodGet, srv.URL()+"healthz", nil)
	require.NoError(t, err)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	resp, err = http.Post(srv.URL()+"api/queues/q/clean", "application/json", strings.NewReader(`{"state":"`+strings.Repeat("a", 2<<20)+`"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}
