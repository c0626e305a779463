package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key to dir and
// returns their paths and a pool trusting it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drover test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestTLS is issue 15 item 10: the dashboard serves HTTPS itself or marks
// cookies Secure behind a proxy; rediss:// to a plain Redis fails at once,
// naming TLS.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	redisURL := "redis://" + redistest.Shared(t).Addr

	// serve runs `drover dashboard args...` until the test ends and returns
	// its URL.
	serve := func(t *testing.T, args ...string) string {
		t.Helper()
		var out testkit.SyncBuffer
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		args = append([]string{"dashboard", "--addr", "127.0.0.1:0", "--redis", redisURL, "--prefix", redistest.UniquePrefix(),
			"--token", "ada:admin-token-0123456789:admin"}, args...)
		go func() { done <- (&Main{Stdout: &out, Stderr: &out}).Run(cctx, args) }()
		t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
		re := regexp.MustCompile(`drover dashboard: (\S+) `)
		var url string
		waitUntil(t, func() bool {
			m := re.FindStringSubmatch(out.String())
			if m != nil {
				url = m[1]
			}
			return m != nil
		})
		return url
	}
	login := func(t *testing.T, hc *http.Client, url string) string {
		t.Helper()
		resp, err := hc.Post(url+"api/login", "application/json", strings.NewReader(`{"token":"admin-token-0123456789"}`))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp.Header.Get("Set-Cookie")
	}

	t.Run("ServesHTTPS", func(t *testing.T) {
		t.Parallel()
		certFile, keyFile, pool := selfSigned(t, t.TempDir())
		url := serve(t, "--tls-cert", certFile, "--tls-key", keyFile)
		require.True(t, strings.HasPrefix(url, "https://127.0.0.1:"), url)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := hc.Get(url + "healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotNil(t, resp.TLS)
		require.Contains(t, login(t, hc, url), "; Secure")
		// Plain HTTP to the HTTPS port gets no dashboard.
		resp, err = http.Get(strings.Replace(url, "https://", "http://", 1) + "healthz")
		if err == nil {
			resp.Body.Close()
			require.NotEqual(t, http.StatusOK, resp.StatusCode)
		}
		require.Error(t, (&Main{Stdout: &testkit.SyncBuffer{}}).Run(ctx, []string{"dashboard", "--tls-cert", certFile}))
	})

	t.Run("SecureCookiesBehindAProxy", func(t *testing.T) {
		t.Parallel()
		url := serve(t, "--secure-cookies")
		require.True(t, strings.HasPrefix(url, "http://"), url)
		require.Contains(t, login(t, http.DefaultClient, url), "; Secure")
	})

	t.Run("RedissToPlainRedisFailsFastNamingTLS", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		err := (&Main{Stdout: &testkit.SyncBuffer{}}).Run(ctx, []string{"queues", "--redis", "rediss://" + redistest.Shared(t).Addr + "/0"})
		require.Error(t, err)
		require.Contains(t, err.Error(), "TLS")
		require.Contains(t, err.Error(), "plain Redis")
		t.Logf("failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	})
}
