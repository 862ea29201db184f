package loader

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
	"time"
)

// clientCertEnv is the variable through which go-plugin's server side
// receives the certificate it must require of its client. It is go-plugin's
// AutoMTLS protocol: a server that finds it makes its own certificate and
// sends it back in the handshake line, and the client trusts only that one.
const clientCertEnv = "PLUGIN_CLIENT_CERT"

// clientCert is the host's side of go-plugin's mutual TLS, made once per
// Loader instead of once per skill process.
//
// go-plugin's AutoMTLS makes a new P-521 key and self-signed certificate on
// the client for every plugin it starts, and signs the handshake with it.
// On a 2-core machine that is about 7 ms of host CPU per start for the
// certificate alone (CreateCertificate checks its own P-521 signature) and
// the skill then spends 5 ms verifying the client's P-521 signature: with
// 50 skills starting, a third of a second of the start-up went there. The
// skill side of the protocol is unchanged and still answers with its own
// per-process P-521 certificate, which the client alone trusts for that
// connection (go-plugin loads it from the handshake line into the
// connection's RootCAs), so what each side trusts is what it trusted with
// AutoMTLS: the host trusts one process's certificate per connection, and a
// skill trusts only the key that the host holds in memory and never hands
// to any process.
type clientCert struct {
	cert tls.Certificate
	env  string // clientCertEnv=<PEM>
}

// newClientCert makes a P-256 key and a self-signed certificate for it in
// the shape go-plugin's generateCert uses (CN and SAN localhost, client and
// server auth, CA so the peer can use it as its own pool's root).
func newClientCert() (*clientCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mTLS key: %w", err)
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("mTLS serial: %w", err)
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
		// host process, which keeps the key in memory only.
		NotBefore: now.Add(-30 * time.Second),
		NotAfter:  now.AddDate(30, 0, 0),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("mTLS certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("mTLS certificate: %w", err)
	}
	return &clientCert{
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		env:  clientCertEnv + "=" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
	}, nil
}

// tlsConfig returns a new client configuration for one skill process, the
// one AutoMTLS would build. It must not be shared: go-plugin stores the
// certificate the skill sends in the handshake line into its RootCAs.
func (c *clientCert) tlsConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{c.cert},
		MinVersion:   tls.VersionTLS12,
		ServerName:   "localhost",
	}
}
