package proc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"time"
)

// ClientCertEnv is the variable through which go-plugin's server side
// receives the certificate it must require of its client. It is go-plugin's
// AutoMTLS protocol: a server that finds it makes its own certificate and
// sends it back in the handshake line, and the client trusts only that one.
const ClientCertEnv = "PLUGIN_CLIENT_CERT"

// ClientCert is the host's side of go-plugin's mutual TLS, made once per
// host (per Loader) instead of once per skill process.
//
// go-plugin's AutoMTLS makes a new P-521 key and self-signed certificate on
// the client for every plugin it starts, and signs the handshake with it.
// On a 2-core machine that is about 7 ms of host CPU per start for the
// certificate alone (CreateCertificate checks its own P-521 signature) and
// the skill then spends 5 ms verifying the client's P-521 signature: with
// 50 skills starting, a third of a second of the start-up went there. The
// skill's side is made by the host too, one P-256 key per process handed
// over on a pipe (ServerIdentity, sdk.ServerTLSFDEnv); a skill that does
// not take it makes its own P-521 certificate as AutoMTLS has it, and
// go-plugin loads that one from the handshake line into the connection's
// RootCAs. What each side trusts is what it trusted with AutoMTLS: the host
// trusts one process's certificate per connection, and a skill trusts only
// the key that the host holds in memory and never hands to any process.
type ClientCert struct {
	cert tls.Certificate
	env  string // ClientCertEnv=<PEM>
}

// NewClientCert makes the host's client key and certificate.
func NewClientCert() (*ClientCert, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	return &ClientCert{
		cert: cert,
		env:  ClientCertEnv + "=" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})),
	}, nil
}

// selfSigned makes a P-256 key and a self-signed certificate for it in the
// shape go-plugin's generateCert uses (CN and SAN localhost, client and
// server auth, CA so the peer can use it as its own pool's root).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("mTLS key: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("mTLS serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"skillhost"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		// go-plugin's margin for a clock step; the far end outlives any
		// process holding the key, which is kept in memory only.
		NotBefore: now.Add(-30 * time.Second),
		NotAfter:  now.AddDate(30, 0, 0),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("mTLS certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("mTLS certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// ServerIdentity is the skill's side of one process's mutual TLS, made by
// the host (see sdk.ServerTLSFDEnv): a P-256 key and certificate in place
// of the P-521 pair that go-plugin's server makes at every start.
type ServerIdentity struct {
	leaf *x509.Certificate
	pem  []byte // the certificate, then the key: what the skill reads
}

// Env is the environment entry (ClientCertEnv=PEM) that tells a skill which
// client certificate to require.
func (c *ClientCert) Env() string { return c.env }

// NewServerIdentity makes one skill process's key and certificate.
func NewServerIdentity() (*ServerIdentity, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("mTLS key: %w", err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	return &ServerIdentity{leaf: cert.Leaf, pem: out}, nil
}

// Leaf is the skill's certificate, for the host's TLSConfig to trust.
func (s *ServerIdentity) Leaf() *x509.Certificate { return s.leaf }

// Pipe returns the read end of a pipe that holds the identity's PEM and is
// already closed for writing, to be inherited by one skill process.
func (s *ServerIdentity) Pipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mTLS pipe: %w", err)
	}
	// A pipe holds 64 KiB before a write blocks; the PEM is about 1 KB.
	_, err = w.Write(s.pem)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("mTLS pipe: %w", err)
	}
	return r, nil
}

// TLSConfig returns a new client configuration for one skill process, the
// one AutoMTLS would build, trusting server (when not nil) as the skill's
// certificate. It must not be shared: go-plugin stores a certificate the
// skill sends in its handshake line into its RootCAs, in place of server.
func (c *ClientCert) TLSConfig(server *x509.Certificate) *tls.Config {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{c.cert},
		MinVersion:   tls.VersionTLS12,
		ServerName:   "localhost",
	}
	if server != nil {
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AddCert(server)
	}
	return cfg
}
