//go:build linux

package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/skillhost/skillhost/internal/testenv"
)

var (
	hostBin  string            // cmd/host
	skillBin string            // internal/testskill
	hostile  map[string]string // test/reliability/skills/<name> by name
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reliability-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := buildAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	if code == 0 {
		if kids := testenv.Descendants(os.Getpid()); len(kids) > 0 {
			fmt.Fprintln(os.Stderr, "processes left behind by the suite:", kids)
			code = 1
		}
	}
	os.Exit(code)
}

// buildAll builds the host, the test skill and every hostile skill, in
// parallel.
func buildAll(dir string) error {
	pkgs := map[string]string{"host": "./cmd/host", "testskill": "./internal/testskill"}
	entries, err := os.ReadDir(filepath.Join(testenv.ModuleRoot(), "test", "reliability", "skills"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" {
			pkgs[e.Name()] = "./test/reliability/skills/" + e.Name()
		}
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sub := filepath.Join(dir, n)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				errs[i] = err
				return
			}
			out[i], errs[i] = testenv.Build(sub, pkgs[n])
		}()
	}
	wg.Wait()
	hostile = map[string]string{}
	for i, n := range names {
		if errs[i] != nil {
			return errs[i]
		}
		switch n {
		case "host":
			hostBin = out[i]
		case "testskill":
			skillBin = out[i]
		default:
			hostile[n] = out[i]
		}
	}
	return nil
}
