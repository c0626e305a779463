package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestTLSRedisProblemsNamed: against a Redis that speaks TLS, a rediss://
// URL whose certificate this machine does not trust said "cannot reach
// Redis at ...: tls: failed to verify certificate", though Redis had
// answered, and did not say how to trust it; a redis:// URL (or bare
// host:port) to its TLS port said "cannot reach Redis at ...: ping redis:
// EOF". Both now name the problem and the fix; SSL_CERT_FILE and
// ?skip_verify=true, the fixes named, work.
func TestTLSRedisProblemsNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	tlsPort, err := redistest.FreePort()
	require.NoError(t, err)
	srv, err := redistest.Start("--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", certFile, "--tls-auth-clients", "no")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	run := func(url string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"queues", "--redis", url})
		return out.String(), err
	}

	_, err = run("rediss://" + addr)
	require.ErrorContains(t, err, "the TLS certificate of Redis at "+addr+" is not trusted on this machine "+
		"(trust its CA with SSL_CERT_FILE=/path/ca.pem, or add ?skip_verify=true to the rediss:// URL to skip the check)")
	require.Equal(t, 1, exitCode(err))
	for _, url := range []string{"redis://" + addr, addr} {
		_, err = run(url)
		require.EqualError(t, err, "the server at "+addr+" speaks TLS and hung up on plain Redis: use rediss:// in --redis or DROVER_REDIS_URL", url)
	}

	out, err := run("rediss://" + addr + "?skip_verify=true")
	require.NoError(t, err, out)
	require.Contains(t, out, "no queues under prefix")
	// SSL_CERT_FILE is read once per process: the binary is run with it.
	cmd := exec.Command(os.Args[0], "queues", "--redis", "rediss://"+addr)
	cmd.Env = append(os.Environ(), "DROVER_TEST_MAIN=1", "SSL_CERT_FILE="+certFile)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "no queues under prefix")
}
