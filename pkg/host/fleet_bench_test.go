package host

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/fleet"
)

// benchFleet runs three hosts on one embedded etcd and one in-process OCI
// registry, each tree holding alpha 1.0.0, behind a balancer.
func benchFleet(b *testing.B, settle time.Duration) (bases []string, cfg FleetConfig, lb string) {
	b.Helper()
	etcd := fleettest.StartEtcd(b)
	reg := fleettest.StartRegistry(b)
	artifacts, err := ParseArtifacts(reg.URL("skills"))
	if err != nil {
		b.Fatal(err)
	}
	ec, err := fleet.ParseEtcdURL(etcd.URL("/fleet"))
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		root := b.TempDir()
		if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: "1.0.0", Binary: testSkillBin}); err != nil {
			b.Fatal(err)
		}
		_, base := runHost(b, Config{Skills: root, Listen: "127.0.0.1:0", Grace: 5 * time.Second, StrictModes: true,
			Fleet: &FleetConfig{Etcd: ec, ID: id, LeaseTTL: 2 * time.Second, Artifacts: artifacts, Settle: settle}})
		bases = append(bases, base)
	}
	return bases, FleetConfig{Etcd: ec, Artifacts: artifacts}, balancer(b, bases...)
}

// waitAll waits until every host serves want and says when.
func waitAll(b *testing.B, want string, bases []string) time.Duration {
	b.Helper()
	began := time.Now()
	if !testenv.WaitFor(60*time.Second, func() bool {
		for _, base := range bases {
			if served(base) != want {
				return false
			}
		}
		return true
	}) {
		b.Fatalf("hosts never all served %s", want)
	}
	return time.Since(began)
}

func report(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Milliseconds()), name+"-median-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Milliseconds()), name+"-max-ms")
}

// BenchmarkFleetPush: push a new version → all three hosts serve it (one
// at a time, each settling 500 ms), under load through the balancer.
// Run with -benchtime=10x for the figure in docs/performance.md.
func BenchmarkFleetPush(b *testing.B) {
	bases, cfg, lb := benchFleet(b, 500*time.Millisecond)
	src := b.TempDir()
	stop := load(lb, 4)
	var ds []time.Duration
	i := 0
	for b.Loop() {
		i++
		version := fmt.Sprintf("%d.0.0", i+1)
		dir, err := testenv.Install(src, testenv.Version{Skill: "alpha", Version: version, Binary: testSkillBin})
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		if _, _, err := PushArtifact(context.Background(), cfg, dir); err != nil {
			b.Fatal(err)
		}
		waitAll(b, version, bases)
		ds = append(ds, time.Since(began))
	}
	calls, failures := stop()
	report(b, "push-to-all", ds)
	b.ReportMetric(float64(calls), "calls")
	b.ReportMetric(float64(len(failures)), "failed-calls")
	if len(failures) > 0 {
		b.Errorf("%d of %d calls failed, first %q", len(failures), calls, failures[0])
	}
}

// BenchmarkFleetDecision: a pin (then an unpin) made on one host → all
// three serve accordingly.
func BenchmarkFleetDecision(b *testing.B) {
	etcd := fleettest.StartEtcd(b)
	ec, err := fleet.ParseEtcdURL(etcd.URL("/fleet"))
	if err != nil {
		b.Fatal(err)
	}
	var bases []string
	for _, id := range []string{"a", "b", "c"} {
		root := b.TempDir()
		for _, v := range []string{"1.0.0", "2.0.0"} {
			if _, err := testenv.Install(root, testenv.Version{Skill: "alpha", Version: v, Binary: testSkillBin}); err != nil {
				b.Fatal(err)
			}
		}
		_, base := runHost(b, Config{Skills: root, Listen: "127.0.0.1:0", Grace: 5 * time.Second,
			Fleet: &FleetConfig{Etcd: ec, ID: id, LeaseTTL: 2 * time.Second}})
		bases = append(bases, base)
	}
	waitAll(b, "2.0.0", bases)
	var pins, disables []time.Duration
	for b.Loop() {
		began := time.Now()
		do(b, "PUT", bases[0]+"/v1/skills/alpha/pin", `{"version":"1.0.0"}`)
		waitAll(b, "1.0.0", bases)
		pins = append(pins, time.Since(began))
		do(b, "DELETE", bases[1]+"/v1/skills/alpha/pin", "")
		waitAll(b, "2.0.0", bases)

		began = time.Now()
		do(b, "POST", bases[2]+"/v1/skills/alpha/disable", "")
		waitAll(b, "", bases)
		disables = append(disables, time.Since(began))
		do(b, "POST", bases[0]+"/v1/skills/alpha/enable", "")
		waitAll(b, "2.0.0", bases)
	}
	report(b, "pin", pins)
	report(b, "disable", disables)
}
