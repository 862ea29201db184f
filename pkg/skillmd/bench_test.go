package skillmd

import (
	"os"
	"strconv"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/skills/pdf-processing/SKILL.md")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, ps := Parse(data); ps.Err() != nil {
			b.Fatal(ps)
		}
	}
}

// BenchmarkLoad is what a rescan pays per unchanged skill: read SKILL.md, walk and hash.
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if s := Load("testdata/skills/pdf-processing", Unversioned); s.Status != StatusValid {
			b.Fatal(s.Problems)
		}
	}
}

// BenchmarkNamedTools is one activation over a registry of 10,000 tools.
func BenchmarkNamedTools(b *testing.B) {
	s := Load("testdata/skills/pdf-processing", Unversioned)
	available := make([]string, 0, 10_000)
	for i := range 10_000 {
		available = append(available, "skill"+strconv.Itoa(i%500)+".tool"+strconv.Itoa(i))
	}
	for b.Loop() {
		_ = s.NamedTools(available)
	}
}

func BenchmarkReadFile(b *testing.B) {
	s := Load("testdata/skills/pdf-processing", Unversioned)
	for b.Loop() {
		if _, err := s.ReadFile("references/forms.md"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCached is a rescan of an unchanged skill through a Cache: SKILL.md is read and
// parsed, the other files are only stat'ed.
func BenchmarkLoadCached(b *testing.B) {
	c := NewCache()
	c.Load("testdata/skills/pdf-processing", Unversioned)
	for b.Loop() {
		if s := c.Load("testdata/skills/pdf-processing", Unversioned); s.Status != StatusValid {
			b.Fatal(s.Problems)
		}
	}
}
