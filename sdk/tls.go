package sdk

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ServerTLSFDEnv names the descriptor on which the host hands a skill the
// key and certificate of its side of the connection's mutual TLS, as PEM
// (the certificate, then the key) on a pipe that the host has closed.
//
// Without it go-plugin's AutoMTLS protocol has the skill make its own P-521
// key and self-signed certificate at every start and send the certificate
// back in the handshake line. P-521 is slow in Go: making that key, signing
// the certificate (and checking the signature, as CreateCertificate does),
// then signing the TLS handshake with it was about a tenth of all CPU while
// 50 skills started on 2 cores (perf, docs/performance.md), the host's check
// of that signature another 2 %. The host makes a P-256 key per skill
// process instead, which costs it a fraction of a millisecond, trusts that
// certificate alone for that process's connection, and passes the key on a
// pipe rather than in the environment, which other processes of the same
// user can read. A skill that does not know this variable (another SDK, an
// older one) still follows AutoMTLS; the certificate in its handshake line
// then replaces the one the host made, as go-plugin does with any.
const ServerTLSFDEnv = "SKILLHOST_TLS_FD"

// maxServerTLSBytes caps what is read from the descriptor: a P-256
// certificate and key take about 1 KB of PEM.
const maxServerTLSBytes = 64 << 10

// serverTLS returns the skill's server TLS configuration when the host
// handed one over (ServerTLSFDEnv), or nil to leave go-plugin to its
// defaults. The variable is removed and the descriptor closed either way,
// so neither reaches a process the skill starts. The configuration is
// AutoMTLS's: the client must present the certificate the host put in
// PLUGIN_CLIENT_CERT.
func serverTLS() (*tls.Config, error) {
	v, ok := os.LookupEnv(ServerTLSFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(ServerTLSFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not a descriptor above stderr", ServerTLSFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "skillhost-tls")
	if f == nil {
		return nil, fmt.Errorf("%s=%d: not an open descriptor", ServerTLSFDEnv, fd)
	}
	pemBytes, err := io.ReadAll(io.LimitReader(f, maxServerTLSBytes+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s=%d: read: %w", ServerTLSFDEnv, fd, err)
	}
	if len(pemBytes) > maxServerTLSBytes {
		return nil, fmt.Errorf("%s=%d: more than %d bytes", ServerTLSFDEnv, fd, maxServerTLSBytes)
	}
	cert, err := tls.X509KeyPair(pemBytes, pemBytes)
	if err != nil {
		return nil, fmt.Errorf("%s=%d: %w", ServerTLSFDEnv, fd, err)
	}
	clientCert := os.Getenv("PLUGIN_CLIENT_CERT")
	if clientCert == "" {
		return nil, fmt.Errorf("%s=%d: ignored without PLUGIN_CLIENT_CERT, the certificate to require of the host", ServerTLSFDEnv, fd)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(clientCert)) {
		return nil, fmt.Errorf("%s=%d: ignored, PLUGIN_CLIENT_CERT holds no PEM certificate", ServerTLSFDEnv, fd)
	}
	// RootCAs and ServerName serve the other direction, as in go-plugin's
	// own AutoMTLS configuration: go-plugin's broker dials the host's Host
	// service (Call) with this configuration, and the host answers with
	// the certificate this pool holds.
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS12,
	}, nil
}
