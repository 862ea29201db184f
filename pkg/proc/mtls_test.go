package proc

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"strings"
	"testing"
)

// serveOnce accepts one TLS connection on a loopback listener with the
// skill's side of the mutual TLS (the identity's key, requiring the host's
// certificate, as the SDK does), writes "ok" and reports how the handshake
// went.
func serveOnce(t *testing.T, id *ServerIdentity, host *ClientCert) (addr string, result <-chan error) {
	t.Helper()
	pemBytes, err := io.ReadAll(mustPipe(t, id))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pemBytes, pemBytes)
	if err != nil {
		t.Fatalf("the identity's PEM is not a key pair: %v", err)
	}
	block, _ := pem.Decode([]byte(strings.TrimPrefix(host.Env(), ClientCertEnv+"=")))
	if block == nil {
		t.Fatalf("%s holds no PEM certificate", ClientCertEnv)
	}
	hostCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(hostCert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		err = c.(*tls.Conn).Handshake()
		if err == nil {
			_, err = io.WriteString(c, "ok")
		}
		done <- err
	}()
	return ln.Addr().String(), done
}

func mustPipe(t *testing.T, id *ServerIdentity) io.Reader {
	t.Helper()
	r, err := id.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestMutualTLSTrustsOnlyEachOther checks the two halves the host makes: a
// skill serving with its ServerIdentity accepts the host's ClientCert, the
// host trusts that skill's certificate, and a client with any other key is
// refused.
func TestMutualTLSTrustsOnlyEachOther(t *testing.T) {
	host, err := NewClientCert()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := NewClientCert()
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewServerIdentity()
	if err != nil {
		t.Fatal(err)
	}

	addr, result := serveOnce(t, id, host)
	conn, err := tls.Dial("tcp", addr, host.TLSConfig(id.Leaf()))
	if err != nil {
		t.Fatalf("the host could not reach its skill: %v", err)
	}
	got, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || string(got) != "ok" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := <-result; err != nil {
		t.Fatalf("the skill refused the host: %v", err)
	}

	// Another key: the skill refuses it (with TLS 1.3 the refusal shows on
	// the client's first read, not in its handshake).
	addr, result = serveOnce(t, id, host)
	conn, err = tls.Dial("tcp", addr, stranger.TLSConfig(id.Leaf()))
	if err == nil {
		_, err = io.ReadAll(conn)
		conn.Close()
	}
	if err == nil {
		t.Error("a client with another key read from the skill")
	}
	if err := <-result; err == nil {
		t.Error("the skill accepted a client with another key")
	}

	// The host refuses a server whose certificate is not the one it made
	// for that process.
	other, err := NewServerIdentity()
	if err != nil {
		t.Fatal(err)
	}
	addr, result = serveOnce(t, other, host)
	if conn, err := tls.Dial("tcp", addr, host.TLSConfig(id.Leaf())); err == nil {
		conn.Close()
		t.Error("the host trusted a skill certificate it did not make for it")
	} else if !errors.As(err, new(*tls.CertificateVerificationError)) && !strings.Contains(err.Error(), "certificate") {
		t.Errorf("refused for another reason: %v", err)
	}
	<-result
}
