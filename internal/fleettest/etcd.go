package fleettest

import (
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is one embedded etcd member.
type Etcd struct {
	// Endpoint is its client address, host:port.
	Endpoint string
	etcd     *embed.Etcd
	stop     sync.Once
}

// StartEtcd runs an etcd member in a temporary folder, on loopback ports the
// kernel picks, and stops it when the test ends.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = t.TempDir()
	// Quiet: its errors at shutdown are expected, and a failure to start
	// comes back from StartEtcd.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	loop := func() []url.URL { return []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}} }
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = loop(), loop()
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = loop(), loop()
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		t.Fatal("embedded etcd not ready after 30 s")
	}
	s := &Etcd{Endpoint: e.Clients[0].Addr().String(), etcd: e}
	t.Cleanup(s.Stop)
	return s
}

// URL is an etcd:// URL of the server with prefix.
func (s *Etcd) URL(prefix string) string { return fmt.Sprintf("etcd://%s%s", s.Endpoint, prefix) }

// Stop stops the member; safe to call twice.
func (s *Etcd) Stop() { s.stop.Do(s.etcd.Close) }
