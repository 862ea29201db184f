package fleet

import (
	"os"
	"path/filepath"

	"github.com/skillhost/skillhost/pkg/loader"
	"github.com/skillhost/skillhost/pkg/manifest"
)

// Serving turns the loader's status into the skills of a HostRecord,
// reading each serving version's digest from its manifest under root.
func Serving(root string, status []loader.SkillStatus) []SkillRecord {
	out := make([]SkillRecord, 0, len(status))
	for _, s := range status {
		rec := SkillRecord{Skill: s.Name, Version: s.Active, State: "none"}
		switch {
		case s.Disabled:
			rec.State = "disabled"
		case s.Active != "":
			rec.State = string(loader.StateActive)
		}
		for _, v := range s.Versions {
			if v.Version == s.Active && s.Active != "" {
				rec.State = string(v.State)
			}
			if v.LastError != "" && (rec.LastError == "" || v.Version == s.Active) {
				rec.LastError = v.Version + ": " + v.LastError
			}
		}
		if s.Active != "" {
			rec.Digest = manifestDigest(filepath.Join(root, s.Name, s.Active))
		}
		out = append(out, rec)
	}
	return out
}

// manifestDigest is "sha256:<hex>" of the entrypoint as the version's
// manifest states it, or "" when it cannot be read.
func manifestDigest(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return ""
	}
	m, _ := manifest.Parse(b)
	if m == nil || m.SHA256 == "" {
		return ""
	}
	return "sha256:" + m.SHA256
}
