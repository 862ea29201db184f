package main

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestFleetTable prints a daemon's /v1/fleet as tables: hosts, then per
// skill which hosts serve which build, with the fleet's decision.
func TestFleetTable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/fleet" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"revision":42,"hosts":[{"id":"a","address":"10.0.0.1:7070","ready":true,"skills":[{"skill":"calc","version":"1.0.0","digest":"sha256:0123456789abcdef0123","state":"active"}],"updated":"2026-12-06T00:00:00Z"}],
			"skills":{"calc":{"digests":[{"digest":"sha256:0123456789abcdef0123","version":"1.0.0","hosts":["a","b"]}]}},"state":{"calc":{"pin":"1.0.0"}},
			"desired":{"calc":{"version":"1.0.0","digest":"sha256:0123456789abcdef0123","rolled_back":"2.0.0 failed on host b: exit"}}}`)
	}))
	defer srv.Close()
	var out, errOut strings.Builder
	if code := runFleet([]string{"--addr", srv.URL}, &out, &errOut); code != exitOK {
		t.Fatalf("host fleet = %d: %s", code, errOut.String())
	}
	for _, want := range []string{"a     10.0.0.1:7070  true", "calc   1.0.0    sha256:0123456789ab  a,b    pinned to 1.0.0", "calc   1.0.0    sha256:0123456789ab  2.0.0 failed on host b: exit", "revision 42"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFleetFlagsNeedAnEtcdState(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		fleet bool
		err   string
	}{
		{args: nil},
		{args: []string{"--state", "etcd://127.0.0.1:2379/f", "--fleet-id", "x"}, fleet: true},
		{args: []string{"--etcd-ca", "ca.pem"}, err: "need --state etcd://"},
		{args: []string{"--state", "redis://x:1"}, err: "scheme must be"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		mk := fleetFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		fc, err := mk()
		if (fc != nil) != tc.fleet || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %+v, %v", tc.args, fc, err)
		}
	}
}
