package loader

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/skillhost/skillhost/pkg/proc"
	"github.com/skillhost/skillhost/sdk"
	skillpb "github.com/skillhost/skillhost/sdk/proto"
)

// activeInstance returns the instance serving skill.
func (h *harness) activeInstance(skill string) *instance {
	h.t.Helper()
	h.l.supMu.Lock()
	s := h.l.sups[skill]
	h.l.supMu.Unlock()
	if s == nil {
		h.t.Fatalf("no supervisor for %s", skill)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		h.t.Fatalf("%s has no active instance", skill)
	}
	return s.active
}

// TestOneClientCertificateTrustedByEverySkill checks the host-wide client
// certificate that replaces AutoMTLS's per-process one: every skill is
// handed the same certificate, serves the host that holds its key, and
// refuses a client that presents any other key, as with AutoMTLS.
func TestOneClientCertificateTrustedByEverySkill(t *testing.T) {
	h := newHarness(t, nil)
	h.install("alpha", "1.0.0", nil)
	h.install("beta", "1.0.0", nil)
	h.start()
	stranger, err := proc.NewClientCert()
	if err != nil {
		t.Fatal(err)
	}
	for _, skill := range []string{"alpha", "beta"} {
		if _, err := h.echo(skill + ".echo"); err != nil {
			t.Fatalf("%s through the host: %v", skill, err)
		}
		inst := h.activeInstance(skill)
		if runtime.GOOS == "linux" {
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", inst.pid))
			if err != nil {
				t.Fatal(err)
			}
			var certs []string
			for _, kv := range strings.Split(string(environ), "\x00") {
				if strings.HasPrefix(kv, proc.ClientCertEnv+"=") {
					certs = append(certs, kv)
				}
			}
			if len(certs) != 1 || certs[0] != h.l.mtls.Env() {
				t.Errorf("%s: got %d %s variables, want exactly the host's certificate", skill, len(certs), proc.ClientCertEnv)
			}
		}
		addr := inst.client.ReattachConfig().Addr
		// The stranger skips verifying the skill (it has no way to know
		// its certificate); the skill must still refuse the stranger.
		if err := tlsRead(addr.Network(), addr.String(), stranger); err == nil {
			t.Errorf("%s accepted a TLS client with a key the host never made", skill)
		} else {
			t.Logf("%s refused the stranger: %v", skill, err)
		}
		// The control: the same dial with the host's key is served (the
		// server's HTTP/2 settings frame arrives).
		if err := tlsRead(addr.Network(), addr.String(), h.l.mtls); err != nil {
			t.Errorf("%s refused a client with the host's key: %v", skill, err)
		}
	}
}

// tlsRead dials addr with c's certificate and reads the first bytes the
// server sends. With TLS 1.3 a refused client certificate shows on that
// read, not in the client's handshake.
func tlsRead(network, addr string, c *proc.ClientCert) error {
	cfg := c.TLSConfig(nil)
	cfg.InsecureSkipVerify = true
	cfg.NextProtos = []string{"h2"} // gRPC servers refuse a TLS client without it
	conn, err := tls.Dial(network, addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 64))
	return err
}

// TestServerCertificateMadeByTheHost checks the skill's side of the mutual
// TLS: a skill built with this SDK serves with the P-256 certificate the
// host made for that process and handed over on a pipe, does not pass the
// pipe's variable on, and a skill that ignores the pipe (an SDK before it)
// still connects with a certificate of its own, as AutoMTLS has it.
func TestServerCertificateMadeByTheHost(t *testing.T) {
	h := newHarness(t, nil)
	h.install("current", "1.0.0", nil)
	h.install("older", "1.0.0", map[string]string{"TESTSKILL_MODE": "automtls"})
	h.start()
	for _, tc := range []struct {
		skill string
		curve elliptic.Curve
	}{{"current", elliptic.P256()}, {"older", elliptic.P521()}} {
		inst := h.activeInstance(tc.skill)
		var p peer.Peer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := inst.rpc.Describe(ctx, &skillpb.DescribeRequest{}, grpc.Peer(&p))
		cancel()
		if err != nil {
			t.Fatalf("%s: describe: %v", tc.skill, err)
		}
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || len(info.State.PeerCertificates) == 0 {
			t.Fatalf("%s: the connection is not TLS with a server certificate (auth info %T)", tc.skill, p.AuthInfo)
		}
		key, ok := info.State.PeerCertificates[0].PublicKey.(*ecdsa.PublicKey)
		if !ok || key.Curve != tc.curve {
			t.Errorf("%s: the skill's certificate has key %T (%v), want %s", tc.skill, info.State.PeerCertificates[0].PublicKey, curveName(key), tc.curve.Params().Name)
		}
		res, err := h.reg.Invoke(context.Background(), tc.skill+".env", nil)
		if err != nil {
			t.Fatalf("%s: env: %v", tc.skill, err)
		}
		var env struct {
			Env []string `json:"env"`
		}
		if err := json.Unmarshal(res.Result, &env); err != nil || len(env.Env) == 0 {
			t.Fatalf("%s: env result %s: %v", tc.skill, res.Result, err)
		}
		for _, kv := range env.Env {
			if strings.HasPrefix(kv, sdk.ServerTLSFDEnv+"=") {
				t.Errorf("%s: the skill's environment still holds %s", tc.skill, kv)
			}
		}
	}
}

func curveName(k *ecdsa.PublicKey) string {
	if k == nil {
		return "none"
	}
	return k.Curve.Params().Name
}
