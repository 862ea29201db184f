package loader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStateStoreKeepsBadFilesAside(t *testing.T) {
	for _, tc := range []struct {
		name, what string
		make       func(path string) error
	}{
		{"corrupt", "corrupt", func(p string) error { return os.WriteFile(p, []byte(`{"version":1,"skills":`), 0o600) }},
		{"unknown version", "corrupt", func(p string) error { return os.WriteFile(p, []byte(`{"version":7}`), 0o600) }},
		{"unreadable (a folder)", "unreadable", func(p string) error { return os.Mkdir(p, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, StateFileName)
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			s, warning, err := OpenStateStore(dir)
			if err != nil || !strings.Contains(warning, tc.what) || !strings.Contains(warning, "kept it as") {
				t.Fatalf("open: warning %q, err %v", warning, err)
			}
			aside, _ := filepath.Glob(filepath.Join(dir, StateFileName+"."+tc.what+"-*"))
			if len(aside) != 1 {
				t.Fatalf("kept aside: %v", aside)
			}
			// A decision now writes a fresh file and leaves the bad one alone.
			if err := s.Update("calc", func(st *Decision) { st.Disabled = true }); err != nil {
				t.Fatal(err)
			}
			again, warning, err := OpenStateStore(dir)
			if err != nil || warning != "" {
				t.Fatalf("reopen: %q %v", warning, err)
			}
			if disabled, _ := again.Get("calc"); !disabled {
				t.Fatal("the decision made after the bad file was not persisted")
			}
			if _, err := os.Stat(aside[0]); err != nil {
				t.Fatalf("the bad file is gone: %v", err)
			}
		})
	}
}
