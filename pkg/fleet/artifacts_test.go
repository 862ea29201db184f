package fleet

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/internal/fleettest"
	"github.com/skillhost/skillhost/internal/testenv"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// fakeBinary is an entrypoint for folders that are packed, never run.
func fakeBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n# "+content+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPushPullVerifies pushes a version folder, records it as desired, and
// finds a puller installing it in another tree, byte for byte; then a
// registry that corrupts or cuts the layer in transit makes every pull
// refuse it with the reason, and the tree keeps what it had.
func TestPushPullVerifies(t *testing.T) {
	srv := fleettest.StartEtcd(t)
	cli := dial(t, srv)
	reg := fleettest.StartRegistry(t)
	ac, err := ParseArtifactsURL(reg.URL("skills"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := ac.Open()
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	dir, err := testenv.Install(src, testenv.Version{Skill: "calc", Version: "1.0.0", Binary: fakeBinary(t, "v1")})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("# calc\n"), 0o644)

	tree := t.TempDir()
	changed := make(chan struct{}, 16)
	p, err := StartPuller(PullerConfig{Client: cli, Prefix: "/t", Repo: repo, Skills: tree, StrictModes: true,
		OnChange: func() { changed <- struct{}{} }, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wait := func(ok func(ArtifactStatus) bool) ArtifactStatus {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			if st := p.Status()["calc"]; ok(st) {
				return st
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("puller status %+v", p.Status())
			}
		}
	}

	d, err := Push(context.Background(), repo, cli, "/t", dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Push(context.Background(), repo, nil, "/t", dir)
	if err != nil || again.Digest != d.Digest {
		t.Fatalf("pushing the same folder twice gave %s then %s (%v): packing is not reproducible", d.Digest, again.Digest, err)
	}
	st := wait(func(s ArtifactStatus) bool { return s.Installed && s.Digest == d.Digest })
	if st.Error != "" {
		t.Fatal(st.Error)
	}
	files, _ := os.ReadDir(dir)
	if len(files) < 3 {
		t.Fatalf("source folder holds %d files", len(files))
	}
	for _, e := range files {
		f := e.Name()
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, err := os.ReadFile(filepath.Join(tree, "calc", "1.0.0", f))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs after the round trip (%v)", f, err)
		}
	}
	if v := manifest.Load(filepath.Join(tree, "calc", "1.0.0"), manifest.Options{StrictModes: true}); v.Status != manifest.StatusValid {
		t.Fatalf("installed folder is %s: %v", v.Status, v.Problems)
	}

	// A host that was away catches up from the desired keys at start; one
	// that restarts over what it installed does not pull it again (the
	// registry now hands out garbage, and nothing is refused).
	late := t.TempDir()
	p2, err := StartPuller(PullerConfig{Client: cli, Prefix: "/t", Repo: repo, Skills: late, StrictModes: true})
	if err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { return p2.Status()["calc"].Installed }) {
		t.Fatalf("a late host did not catch up: %+v", p2.Status())
	}
	p2.Close()
	reg.Tamper(func([]byte) []byte { return []byte("garbage") })
	p3, err := StartPuller(PullerConfig{Client: cli, Prefix: "/t", Repo: repo, Skills: late, StrictModes: true})
	if err != nil {
		t.Fatal(err)
	}
	if !testenv.WaitFor(10*time.Second, func() bool { _, ok := p3.Status()["calc"]; return ok }) || !p3.Status()["calc"].Installed {
		t.Fatalf("a restarted host pulled again what it had: %+v", p3.Status())
	}
	p3.Close()
	reg.Tamper(nil)

	for _, tc := range []struct {
		name   string
		tamper func([]byte) []byte
		want   string
	}{
		{"flipped byte", func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 1; return b }, "digest"},
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }, "mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v2, err := testenv.Install(src, testenv.Version{Skill: "calc", Version: "2.0.0", Binary: fakeBinary(t, tc.name)})
			if err != nil {
				t.Fatal(err)
			}
			reg.Tamper(tc.tamper)
			defer reg.Tamper(nil)
			d2, err := Push(context.Background(), repo, cli, "/t", v2)
			if err != nil {
				t.Fatal(err)
			}
			st := wait(func(s ArtifactStatus) bool { return s.Digest == d2.Digest && s.Error != "" })
			if st.Installed || !strings.Contains(st.Error, tc.want) {
				t.Fatalf("status %+v, want a refusal naming the %s", st, tc.want)
			}
			if _, err := os.Stat(filepath.Join(tree, "calc", "2.0.0")); err == nil {
				t.Fatal("a refused artifact reached the tree")
			}
			os.RemoveAll(v2)
		})
	}
}

// TestUnpackRefusesWhatTheLoaderWould: a layer whose folder does not verify
// (the entrypoint does not match the manifest's sha256) or that escapes
// its folder is refused and leaves the tree as it was.
func TestUnpackRefusesWhatTheLoaderWould(t *testing.T) {
	src := t.TempDir()
	dir, err := testenv.Install(src, testenv.Version{Skill: "calc", Version: "1.0.0", Binary: fakeBinary(t, "v1"), SHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	layer, err := Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := Unpack(layer, tree, "calc", "1.0.0", true); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("Unpack = %v, want the checksum mismatch refused", err)
	}
	if entries, _ := os.ReadDir(tree); len(entries) != 1 || entries[0].Name() != ".staging" {
		t.Fatalf("tree after a refusal: %v", entries)
	}
	if err := untar(tarOf(t, "../evil", "x"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "leaves the version folder") {
		t.Fatalf("untar of ../evil = %v", err)
	}
}

func tarOf(t *testing.T, name, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, body)
	tw.Close()
	return b.Bytes()
}
