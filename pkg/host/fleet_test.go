package host

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/fleet"
)

// runHost runs a host with cfg until the test ends.
func runHost(t testing.TB, cfg Config) (*Host, string) {
	t.Helper()
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("%s: Run = %v", cfg.Fleet.ID, err)
		}
	})
	<-h.Ready()
	return h, "http://" + h.Addr().String()
}

// fleetHost runs a host of a fleet, with a skills tree of its own holding
// alpha 1.0.0 and 2.0.0, until the test ends.
func fleetHost(t *testing.T, srv *fleettest.Etcd, id string) (*Host, string) {
	t.Helper()
	root := t.TempDir()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: v, Binary: testSkillBin}); err != nil {
			t.Fatal(err)
		}
	}
	ec, err := fleet.ParseEtcdURL(srv.URL("/fleet"))
	if err != nil {
		t.Fatal(err)
	}
	return runHost(t, Config{Skills: root, Listen: "127.0.0.1:0", Grace: 5 * time.Second,
		Fleet: &FleetConfig{Etcd: ec, ID: id, LeaseTTL: 2 * time.Second}})
}

// served is the version of alpha a host serves, "" if none.
func served(base string) string {
	resp, err := http.Post(base+"/v1/tools/alpha.echo/invoke", "application/json", strings.NewReader(`{"arguments":{"msg":"hi"}}`))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var out struct {
		Version string `json:"version"`
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return ""
	}
	return out.Version
}

func do(t testing.TB, method, url, body string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, url, resp.StatusCode)
	}
}

func fleetView(t *testing.T, base string) fleet.View {
	t.Helper()
	resp, err := http.Get(base + "/v1/fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v fleet.View
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&v) != nil {
		t.Fatalf("GET /v1/fleet: %d", resp.StatusCode)
	}
	return v
}

// converge waits until every host serves want ("" for: alpha is not
// served), and says how long that took.
func converge(t *testing.T, want string, bases ...string) time.Duration {
	t.Helper()
	began := time.Now()
	if !testenv.WaitFor(10*time.Second, func() bool {
		for _, b := range bases {
			if served(b) != want {
				return false
			}
		}
		return true
	}) {
		var got []string
		for _, b := range bases {
			got = append(got, served(b))
		}
		t.Fatalf("hosts serve %q, want all %q", got, want)
	}
	return time.Since(began)
}

// TestFleetSharesDecisions runs three hosts on one etcd: a pin, a disable,
// an enable and an unpin made on any one host reach the others through
// the watch; GET /v1/fleet shows the three and what they serve; the event
// stream carries the changes with resumable ids; a host that dies without
// deregistering leaves after its lease.
func TestFleetSharesDecisions(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	_, a := fleetHost(t, srv, "a")
	_, b := fleetHost(t, srv, "b")
	hc, c := fleetHost(t, srv, "c")
	converge(t, "2.0.0", a, b, c)

	if !testenv.WaitFor(10*time.Second, func() bool {
		v := fleetView(t, c)
		d := v.Skills["alpha"].Digests
		return len(v.Hosts) == 3 && v.Hosts[0].Ready && len(d) == 1 && d[0].Version == "2.0.0" && len(d[0].Hosts) == 3 &&
			strings.HasPrefix(d[0].Digest, "sha256:")
	}) {
		t.Fatalf("fleet view: %+v", fleetView(t, c))
	}

	// The stream from c, opened before the changes.
	req, _ := http.NewRequest("GET", c+"/v1/fleet/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func(kind string) (id string) {
		t.Helper()
		var ev string
		for events.Scan() {
			line := events.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case line == "" && ev == kind:
				return id
			}
		}
		t.Fatalf("stream ended before a %s event: %v", kind, events.Err())
		return ""
	}
	hello := next("hello")

	do(t, "PUT", a+"/v1/skills/alpha/pin", `{"version":"1.0.0"}`)
	t.Logf("pin on a reached b and c in %v", converge(t, "1.0.0", b, c))
	pinID := next("state")

	do(t, "POST", b+"/v1/skills/alpha/disable", "")
	t.Logf("disable on b reached a and c in %v", converge(t, "", a, c))
	do(t, "POST", c+"/v1/skills/alpha/enable", "")
	converge(t, "1.0.0", a, b)
	do(t, "DELETE", a+"/v1/skills/alpha/pin", "")
	converge(t, "2.0.0", a, b, c)

	// Resuming after hello replays the pin first, with the same id.
	req, _ = http.NewRequest("GET", a+"/v1/fleet/events", nil)
	req.Header.Set("Last-Event-ID", hello)
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events = bufio.NewScanner(resp2.Body)
	if id := next("state"); id != pinID {
		t.Errorf("resumed stream's first state event has id %s, want the pin's %s", id, pinID)
	}
	resp2.Body.Close()

	// c dies without deregistering: listed until its lease expires.
	hc.fleet.reg.Abandon()
	began := time.Now()
	if !testenv.WaitFor(10*time.Second, func() bool { return len(fleetView(t, a).Hosts) == 2 }) {
		t.Fatalf("dead host still listed: %+v", fleetView(t, a).Hosts)
	}
	t.Logf("c left %v after it stopped renewing (TTL 2 s)", time.Since(began).Round(time.Millisecond))
}
