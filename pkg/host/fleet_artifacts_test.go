package host

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/fleet"
)

// balancer is a load balancer for the test: round robin over the hosts
// whose /readyz answers 200, checked every 100 ms, as haproxy would.
func balancer(t testing.TB, bases ...string) string {
	t.Helper()
	var healthy atomic.Pointer[[]*url.URL]
	check := func() {
		var up []*url.URL
		for _, b := range bases {
			resp, err := http.Get(b + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					u, _ := url.Parse(b)
					up = append(up, u)
				}
			}
		}
		healthy.Store(&up)
	}
	check()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				check()
			}
		}
	})
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		up := *healthy.Load()
		if len(up) == 0 {
			return // no backend: the proxy answers 502
		}
		r.SetURL(up[next.Add(1)%uint64(len(up))])
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(func() {
		srv.Close()
		close(stop)
		wg.Wait()
	})
	return srv.URL
}

// load calls alpha.echo through lb from n goroutines until the returned
// function is called, which reports the calls made and the failures.
func load(lb string, n int) func() (calls int64, failures []string) {
	var calls atomic.Int64
	var mu sync.Mutex
	var failed []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post(lb+"/v1/tools/alpha.echo/invoke", "application/json", strings.NewReader(`{"arguments":{"msg":"hi"}}`))
				calls.Add(1)
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					continue
				}
				var body bytes.Buffer
				body.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					mu.Lock()
					failed = append(failed, resp.Status+" "+body.String())
					mu.Unlock()
				}
			}
		})
	}
	return func() (int64, []string) {
		close(stop)
		wg.Wait()
		return calls.Load(), failed
	}
}

// TestFleetRollsOutArtifacts runs three hosts on one etcd and one OCI
// registry behind a balancer, under load: a pushed version reaches every
// host by digest and serves on all three with one build, with no failed
// call; a push that the registry corrupts is refused by every host, with
// the reason in the fleet's status, and the version before keeps serving.
func TestFleetRollsOutArtifacts(t *testing.T) {
	etcd := fleettest.StartEtcd(t)
	reg := fleettest.StartRegistry(t)
	artifacts, err := ParseArtifacts(reg.URL("skills"))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := fleet.ParseEtcdURL(etcd.URL("/fleet"))
	if err != nil {
		t.Fatal(err)
	}
	var bases, roots []string
	for _, id := range []string{"a", "b", "c"} {
		root := t.TempDir()
		roots = append(roots, root)
		if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
			t.Fatal(err)
		}
		_, base := runHost(t, Config{Skills: root, Listen: "127.0.0.1:0", Grace: 5 * time.Second, StrictModes: true,
			Fleet: &FleetConfig{Etcd: ec, ID: id, LeaseTTL: 2 * time.Second, Artifacts: artifacts, Settle: 500 * time.Millisecond}})
		bases = append(bases, base)
	}
	converge(t, "1.0.0", bases...)
	lb := balancer(t, bases...)
	stopLoad := load(lb, 4)

	src := t.TempDir()
	push := func(version string, env map[string]string) string {
		t.Helper()
		dir := filepath.Join(src, "alpha", version)
		if _, err := os.Stat(dir); err != nil {
			if dir, err = testenv.Install(src, testenv.Version{Skill: "alpha", Version: version, Binary: testSkillBin, Env: env}); err != nil {
				t.Fatal(err)
			}
		}
		_, digest, err := PushArtifact(context.Background(), FleetConfig{Etcd: ec, Artifacts: artifacts}, dir)
		if err != nil {
			t.Fatal(err)
		}
		return digest
	}

	began := time.Now()
	d2 := push("2.0.0", nil)
	converge(t, "2.0.0", bases...)
	t.Logf("push → all three serving 2.0.0 in %v", time.Since(began).Round(time.Millisecond))
	if !testenv.WaitFor(10*time.Second, func() bool {
		v := fleetView(t, bases[0])
		b := v.Skills["alpha"].Digests
		if len(v.Hosts) != 3 || len(b) != 1 || b[0].Version != "2.0.0" || len(b[0].Hosts) != 3 {
			return false
		}
		for _, h := range v.Hosts {
			if a := h.Artifacts["alpha"]; !a.Installed || a.Digest != d2 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("fleet view after the push: %+v", fleetView(t, bases[0]))
	}

	reg.Tamper(func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 1; return b })
	d3 := push("3.0.0", nil)
	if !testenv.WaitFor(10*time.Second, func() bool {
		for _, h := range fleetView(t, bases[0]).Hosts {
			if a := h.Artifacts["alpha"]; a.Digest != d3 || a.Installed || !strings.Contains(a.Error, "digest") {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("a tampered artifact was not refused everywhere: %+v", fleetView(t, bases[0]).Hosts)
	}
	reg.Tamper(nil)
	for _, b := range bases {
		if v := served(b); v != "2.0.0" {
			t.Errorf("%s serves %q after a refused push, want 2.0.0", b, v)
		}
	}
	// The operator makes 2.0.0 the desired version again (the same
	// folder packs to the same digest), so a rollback has a good place to
	// go back to.
	if again := push("2.0.0", nil); again != d2 {
		t.Fatalf("pushing 2.0.0 again gave %s, want %s", again, d2)
	}

	// A version that cannot start: the first host to swap fails it and
	// rolls the fleet back to 2.0.0, with the reason; no other host
	// swaps, and nobody stops serving.
	d4 := push("4.0.0", map[string]string{"TESTSKILL_MODE": "exit"})
	if !testenv.WaitFor(30*time.Second, func() bool {
		v := fleetView(t, bases[0])
		d := v.Desired["alpha"]
		return d.Digest == d2 && strings.Contains(d.RolledBack, "4.0.0 ("+d4+") failed on host")
	}) {
		t.Fatalf("no rollback: desired %+v", fleetView(t, bases[0]).Desired)
	}
	t.Logf("rolled back: %s", fleetView(t, bases[0]).Desired["alpha"].RolledBack)
	for _, root := range roots {
		if _, err := os.Stat(filepath.Join(root, "alpha", "4.0.0")); err == nil {
			t.Errorf("%s still holds the failed 4.0.0 after the rollback", root)
		}
	}
	converge(t, "2.0.0", bases...)

	calls, failures := stopLoad()
	t.Logf("%d calls through the balancer during the rollout, %d failed", calls, len(failures))
	if len(failures) > 0 || calls == 0 {
		t.Fatalf("%d of %d calls failed, first: %q", len(failures), calls, failures[:min(3, len(failures))])
	}
}
