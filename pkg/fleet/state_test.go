package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/pkg/loader"
)

func dial(t *testing.T, srv *fleettest.Etcd) *clientv3.Client {
	t.Helper()
	cfg, err := ParseEtcdURL(srv.URL("/t"))
	if err != nil {
		t.Fatal(err)
	}
	cli, err := Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func newStore(t *testing.T, cli *clientv3.Client) *Store {
	t.Helper()
	s, err := NewStore(cli, "/t", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFor waits until ok holds, looking again at each Changes signal,
// the loader's cue: a change that never signals fails the test. (A signal
// may come for the store's own write too, when the watch sees it before
// Update records it; that costs the loader one rescan.)
func waitFor(t *testing.T, s *Store, ok func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !ok() {
		select {
		case <-s.Changes():
		case <-deadline:
			t.Fatal("no change signalled within 5 s")
		}
	}
}

// TestStoreConverges: a decision made through one host's store reaches
// another's through the watch, with a change signal, and a deletion too.
func TestStoreConverges(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	a, b := newStore(t, dial(t, srv)), newStore(t, dial(t, srv))

	if err := a.Update("calc", func(d *loader.Decision) { d.Pin = "1.0.0" }); err != nil {
		t.Fatal(err)
	}
	if _, pin := a.Get("calc"); pin != "1.0.0" {
		t.Fatalf("writer does not read its own pin: %q", pin)
	}
	waitFor(t, b, func() bool { _, pin := b.Get("calc"); return pin == "1.0.0" })
	if err := b.Update("calc", func(d *loader.Decision) { d.Pin = "" }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, func() bool { _, pin := a.Get("calc"); return pin == "" })
	if len(a.Decisions()) != 0 {
		t.Fatalf("a decision left after unpin: %v", a.Decisions())
	}
	// A fresh store starts from what etcd holds.
	if err := a.Update("calc", func(d *loader.Decision) { d.Disabled = true }); err != nil {
		t.Fatal(err)
	}
	if dis, _ := newStore(t, dial(t, srv)).Get("calc"); !dis {
		t.Fatal("a new host does not load the stored decision")
	}
}

// TestConcurrentUpdatesNeverLoseOne: operators on many hosts change
// different fields of one skill at once; compare-and-swap re-applies the
// losers, so every change lands.
func TestConcurrentUpdatesNeverLoseOne(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	stores := []*Store{newStore(t, dial(t, srv)), newStore(t, dial(t, srv)), newStore(t, dial(t, srv))}
	// Each writer appends its mark to the pin; a lost update loses a mark.
	const perWriter = 10
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for j := range perWriter {
				mark := string(rune('a'+i)) + string(rune('0'+j))
				if err := s.Update("calc", func(d *loader.Decision) { d.Pin += mark + "," }); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	_, pin := newStore(t, dial(t, srv)).Get("calc")
	if n := strings.Count(pin, ","); n != len(stores)*perWriter {
		t.Fatalf("%d of %d updates landed: %q", n, len(stores)*perWriter, pin)
	}
}

func TestParseEtcdURL(t *testing.T) {
	for _, tc := range []struct {
		in, prefix, err string
		eps             int
		tls             bool
	}{
		{in: "etcd://127.0.0.1:2379", prefix: DefaultPrefix, eps: 1},
		{in: "etcds://a:1,b:2/fleet/one/", prefix: "/fleet/one", eps: 2, tls: true},
		{in: "etcd://ops@a:1/x", prefix: "/x", eps: 1},
		{in: "etcd://ops:secret@a:1/x", err: "password may not stand in the URL"},
		{in: "http://a:1", err: "scheme must be"},
		{in: "etcd://a/x", err: `endpoint "a" is not host:port`},
	} {
		c, err := ParseEtcdURL(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || c.Prefix != tc.prefix || len(c.Endpoints) != tc.eps || c.TLS != tc.tls {
			t.Errorf("%s: %+v, %v", tc.in, c, err)
		}
	}
}

func TestSecretFilesMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(EtcdConfig{Endpoints: []string{"127.0.0.1:1"}, Username: "ops", PasswordFile: open})
	if err == nil || !strings.Contains(err.Error(), "readable by others") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v: want the mode named and the secret absent", err)
	}
	private := filepath.Join(dir, "private")
	if err := os.WriteFile(private, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Dial(EtcdConfig{Endpoints: []string{"127.0.0.1:1"}, PasswordFile: private, TokenFile: private, CertFile: "x"})
	if err == nil || !strings.Contains(err.Error(), "not both") || !strings.Contains(err.Error(), "user name") || !strings.Contains(err.Error(), "both the cert file and the key file") {
		t.Fatalf("want every problem at once, got %v", err)
	}
}
