package loader

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/skillhost/skillhost/pkg/manifest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestLoaderPublishesAgentSkills: a rescan publishes the tree's Agent Skills, in both layouts,
// announces each change as a lifecycle event, and never runs anything from their folders.
func TestLoaderPublishesAgentSkills(t *testing.T) {
	tree := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(tree, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil { // executable, and still never run
			t.Fatal(err)
		}
	}
	md := func(name, desc string) string {
		return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\nSteps.\n"
	}
	write("notes/SKILL.md", md("notes", "Take meeting notes."))
	write("notes/scripts/run.sh", "#!/bin/sh\ntouch "+filepath.Join(tree, "ran")+"\n")
	write("trip/1.0.0/SKILL.md", md("trip", "Plan a trip."))

	var mu sync.Mutex
	var events []Event
	ld, err := New(Config{Skills: tree, Registry: registry.New(registry.Config{}), Logger: hclog.NewNullLogger(),
		OnEvent: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close(context.Background())
	changed := ld.Catalog().Changed()
	if err := ld.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-changed // Start's scan published
	snap := ld.Catalog().Snapshot()
	if snap.Len() != 2 {
		t.Fatalf("catalog holds %d skills, want notes and trip", snap.Len())
	}
	if e, _ := snap.Get("trip"); e.Serving.Version != "1.0.0" {
		t.Fatalf("trip serves %q", e.Serving.Version)
	}

	write("trip/1.1.0/SKILL.md", "---\nname: trip\n---\n")
	if err := ld.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e, _ := ld.Catalog().Snapshot().Get("trip"); e.Serving.Version != "1.0.0" {
		t.Fatalf("an invalid 1.1.0 replaced 1.0.0: %q serves", e.Serving.Version)
	}
	if err := os.RemoveAll(filepath.Join(tree, "notes")); err != nil {
		t.Fatal(err)
	}
	if err := ld.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := ld.Catalog().Snapshot().Get("notes"); ok {
		t.Fatal("notes still serves after its folder was removed")
	}
	if _, err := os.Stat(filepath.Join(tree, "ran")); err == nil {
		t.Fatal("a script of an Agent Skill ran")
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, e := range events {
		got = append(got, e.Skill+" "+string(e.State))
	}
	want := []string{"notes active", "trip active", "trip invalid", "notes stopped"}
	if !slices.Equal(got, want) || events[1].Version != "1.0.0" || events[2].Version != "1.1.0" || events[2].Reason == "" {
		t.Fatalf("events = %+v, want %v", events, want)
	}
}

// TestTiedSkillIsOneUnit: SKILL.md beside a binary's manifest.json is part of the version. An
// invalid SKILL.md holds the version back with its problems; fixing it serves the binary and
// its instructions together.
func TestTiedSkillIsOneUnit(t *testing.T) {
	tree := t.TempDir()
	if err := exampleInstall(tree, "greet", "1.0.0", testSkillBin); err != nil {
		t.Fatal(err)
	}
	skillMD := filepath.Join(tree, "greet", "1.0.0", "SKILL.md")
	if err := os.WriteFile(skillMD, []byte("---\nname: greet\n---\n\nNo description.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(registry.Config{})
	ld, err := New(Config{Skills: tree, Registry: reg, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer ld.Close(context.Background())
	if err := ld.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, _ := ld.Skill("greet")
	if st.Active != "" || len(st.Versions) != 1 || st.Versions[0].State != StateInvalid ||
		!slices.ContainsFunc(st.Versions[0].Problems, func(p manifest.Problem) bool { return strings.Contains(p.Path, "SKILL.md") }) {
		t.Fatalf("a tied version with an invalid SKILL.md = %+v; want invalid, naming SKILL.md", st)
	}
	if _, ok := ld.Catalog().Snapshot().Get("greet"); ok {
		t.Fatal("invalid instructions serve")
	}

	if err := os.WriteFile(skillMD, []byte("---\nname: greet\ndescription: How to greet people well.\n---\n\nUse `echo`.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ld.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := ld.Skill("greet"); st.Active != "1.0.0" {
		t.Fatalf("after SKILL.md was fixed, greet = %+v", st)
	}
	e, ok := ld.Catalog().Snapshot().Get("greet")
	if !ok || !e.Serving.Tied {
		t.Fatalf("greet's instructions = %+v, want tied and serving", e)
	}
	var names []string
	for _, tl := range reg.Snapshot().Tools() {
		names = append(names, tl.Name)
	}
	if got := e.Serving.ActivationTools(names); !slices.Equal(got, []string{"greet.echo"}) {
		t.Fatalf("activation brings %v, want greet.echo", got)
	}
}
