package manifest

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// script is a valid entrypoint on any unix host: /bin/sh exists everywhere the tests run.
var script = []byte("#!/bin/sh\necho hello\n")

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// baseManifest is a valid manifest for skill/version whose entrypoint "run" holds bin.
func baseManifest(skill, version string, bin []byte) map[string]any {
	return map[string]any{
		"manifest_version": 1,
		"name":             skill,
		"version":          version,
		"description":      "Adds numbers.",
		"entrypoint":       "run",
		"sha256":           sum(bin),
		"tags":             []any{"math"},
		"tools":            []any{"add"},
		"env":              map[string]any{"LANG": "C"},
		"limits":           map[string]any{"timeout_ms": 1000},
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // WriteFile's mode is filtered by umask
		t.Fatal(err)
	}
}

// writeVersion writes root/skill/version with a valid manifest (after edit) and entrypoint.
func writeVersion(t testing.TB, root, skill, version string, bin []byte, edit func(m map[string]any)) string {
	t.Helper()
	dir := filepath.Join(root, skill, version)
	m := baseManifest(skill, version, bin)
	if edit != nil {
		edit(m)
	}
	writeFile(t, filepath.Join(dir, "run"), bin, 0o755)
	writeFile(t, filepath.Join(dir, FileName), mustJSON(t, m), 0o644)
	return dir
}

// fakeELF is the smallest file debug/elf accepts: a 64-byte header, no sections.
func fakeELF(machine elf.Machine, order binary.ByteOrder) []byte {
	h := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Ehsize:    64,
		Phentsize: 56,
		Shentsize: 64,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	if order == binary.BigEndian {
		h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	_ = binary.Write(&b, order, h)
	return b.Bytes()
}

// nativeELF and foreignELF are fake binaries for this host's architecture and another one.
func nativeELF(t testing.TB) []byte {
	a, ok := elfArches[runtime.GOARCH]
	if !ok || a.class != elf.ELFCLASS64 {
		t.Skipf("no 64-bit ELF mapping for %s", runtime.GOARCH)
	}
	return fakeELF(a.machine, a.order)
}

func foreignELF() []byte {
	if runtime.GOARCH == "arm64" {
		return fakeELF(elf.EM_X86_64, binary.LittleEndian)
	}
	return fakeELF(elf.EM_AARCH64, binary.LittleEndian)
}

// hasProblem reports whether ps holds a problem at path whose message contains every part.
func hasProblem(ps Problems, path string, parts ...string) bool {
	for _, p := range ps {
		if p.Path != path {
			continue
		}
		ok := true
		for _, s := range parts {
			if !strings.Contains(p.Message, s) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
