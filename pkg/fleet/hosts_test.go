package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/loader"
)

func hostIDs(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	v, err := ReadView(context.Background(), cli, "/t")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range v.Hosts {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestRegistrarLeaves: a host that closes leaves at once; one that dies
// (Abandon: no revoke, no keep-alive) leaves when its lease expires.
func TestRegistrarLeaves(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	cli := dial(t, srv)
	reg := func(id string, skills ...SkillRecord) *Registrar {
		r, err := Register(RegistrarConfig{Client: dial(t, srv), Prefix: "/t", TTL: 2 * time.Second,
			Report: func() HostRecord { return HostRecord{ID: id, Ready: true, Skills: skills} }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	a := reg("a", SkillRecord{Skill: "calc", Version: "1.0.0", Digest: "sha256:aa", State: "active"})
	b := reg("b", SkillRecord{Skill: "calc", Version: "1.0.0", Digest: "sha256:aa", State: "active"})
	reg("c", SkillRecord{Skill: "calc", Version: "2.0.0", Digest: "sha256:bb", State: "active"})

	v, err := ReadView(context.Background(), cli, "/t")
	if err != nil {
		t.Fatal(err)
	}
	d := v.Skills["calc"].Digests
	if len(v.Hosts) != 3 || len(d) != 2 || len(d[0].Hosts) != 2 || d[0].Digest != "sha256:aa" || d[1].Hosts[0] != "c" {
		t.Fatalf("view: %+v", v)
	}

	a.Close()
	if ids := hostIDs(t, cli); len(ids) != 2 || ids[0] != "b" {
		t.Fatalf("after a closed: %v", ids)
	}
	began := time.Now()
	b.Abandon()
	if ids := hostIDs(t, cli); len(ids) != 2 {
		t.Fatalf("a dead host left before its lease expired: %v", ids)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return len(hostIDs(t, cli)) == 1 }) {
		t.Fatalf("dead host still listed: %v", hostIDs(t, cli))
	}
	t.Logf("dead host left after %v (TTL 2 s)", time.Since(began).Round(time.Millisecond))
}

// TestFollowResumes: events carry revisions; following from one of them
// again yields the same events; a compacted revision is a named error.
func TestFollowResumes(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	cli := dial(t, srv)
	s := newStore(t, cli)
	for _, pin := range []string{"1.0.0", "2.0.0"} {
		if err := s.Update("calc", func(d *loader.Decision) { d.Pin = pin }); err != nil {
			t.Fatal(err)
		}
	}
	first, err := cli.Get(context.Background(), "/t/state/calc")
	if err != nil {
		t.Fatal(err)
	}
	last := first.Kvs[0].ModRevision
	var got []Event
	ctx, cancel := context.WithCancel(context.Background())
	err = Follow(ctx, cli, "/t", last-1, func(e Event) error {
		got = append(got, e)
		if e.Revision == last {
			cancel()
		}
		return nil
	})
	cancel()
	if !errors.Is(err, context.Canceled) || len(got) != 2 || got[0].Kind != "state" || got[0].Name != "calc" || string(got[1].Value) != `{"pin":"2.0.0"}` {
		t.Fatalf("Follow = %v, events %+v", err, got)
	}
	if _, err := cli.Compact(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	err = Follow(context.Background(), cli, "/t", last-1, func(Event) error { return nil })
	if !errors.Is(err, ErrCompacted) {
		t.Fatalf("Follow from a compacted revision = %v, want ErrCompacted", err)
	}
}
