//go:build unix

package sdk

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testPEM returns a self-signed P-256 certificate and its key as PEM.
func testPEM(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// handOver puts data on a pipe, closed once written, and points ServerTLSFDEnv at its read
// end, as the host does for a skill. It returns the descriptor handed over.
func handOver(t *testing.T, data []byte) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// From a goroutine: more than 64 KiB would fill the pipe.
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Write(data)
		w.Close()
	}()
	t.Cleanup(func() {
		r.Close() // ends a write still blocked
		<-done
	})
	// serverTLS closes what it is given: give it a descriptor of its own.
	fd, err := syscall.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(ServerTLSFDEnv, strconv.Itoa(fd))
	return fd
}

func TestServerTLS(t *testing.T) {
	certPEM, keyPEM := testPEM(t)
	hostCert, _ := testPEM(t)

	t.Run("not handed over", func(t *testing.T) {
		t.Setenv(ServerTLSFDEnv, "")
		os.Unsetenv(ServerTLSFDEnv)
		cfg, err := serverTLS()
		if cfg != nil || err != nil {
			t.Fatalf("got %v, %v; want go-plugin's defaults (nil, nil)", cfg, err)
		}
	})
	t.Run("handed over", func(t *testing.T) {
		t.Setenv("PLUGIN_CLIENT_CERT", string(hostCert))
		fd := handOver(t, append(certPEM, keyPEM...))
		cfg, err := serverTLS()
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Certificates) != 1 || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.ClientCAs == nil {
			t.Fatalf("config %+v: want the handed certificate and a required client certificate", cfg)
		}
		if _, set := os.LookupEnv(ServerTLSFDEnv); set {
			t.Errorf("%s is still set: a process the skill starts would inherit it", ServerTLSFDEnv)
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0); errno != syscall.EBADF {
			t.Errorf("descriptor %d is still open", fd)
		}
	})
	for _, tc := range []struct {
		name, fd   string
		data       []byte
		clientCert string
		want       string
	}{
		{"not a number", "three", nil, string(hostCert), `SKILLHOST_TLS_FD="three": not a descriptor above stderr`},
		{"stdin", "0", nil, string(hostCert), "not a descriptor above stderr"},
		{"garbage", "", []byte("not pem"), string(hostCert), "SKILLHOST_TLS_FD="},
		{"no key", "", certPEM, string(hostCert), "SKILLHOST_TLS_FD="},
		{"no client certificate", "", append(certPEM, keyPEM...), "", "ignored without PLUGIN_CLIENT_CERT"},
		{"bad client certificate", "", append(certPEM, keyPEM...), "garbage", "PLUGIN_CLIENT_CERT holds no PEM certificate"},
		{"too much", "", make([]byte, maxServerTLSBytes+1), string(hostCert), "more than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PLUGIN_CLIENT_CERT", tc.clientCert)
			if tc.fd != "" {
				t.Setenv(ServerTLSFDEnv, tc.fd)
			} else {
				handOver(t, tc.data)
			}
			cfg, err := serverTLS()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error containing %q", cfg, err, tc.want)
			}
		})
	}
}
