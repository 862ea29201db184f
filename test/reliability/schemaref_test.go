//go:build linux

package reliability

import (
	"errors"

	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestSchemaRefsLoadNothing installs skills whose tool schemas point at a
// file or a URL in every way JSON Schema allows ($ref, $schema, $id plus a
// relative $ref, $dynamicRef, an output schema). Each is refused at load
// time without the host opening the file or connecting anywhere: the file is
// a FIFO (opening it for reading would block until a writer came, so a host
// that tried would hang in the load) and the URL is a listener that counts
// connections.
func TestSchemaRefsLoadNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "schema.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	url := "http://" + ln.Addr().String()
	cases := map[string]string{
		"ref-fifo":       `{"type":"object","properties":{"a":{"$ref":"file://` + fifo + `"}}}`,
		"ref-passwd":     `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
		"ref-http":       `{"type":"object","properties":{"a":{"$ref":"` + url + `/schema.json"}}}`,
		"ref-https":      `{"type":"object","properties":{"a":{"$ref":"https://` + ln.Addr().String() + `/s.json#/x"}}}`,
		"ref-metaschema": `{"$schema":"` + url + `/meta.json","type":"object"}`,
		"ref-id":         `{"$id":"` + url + `/root.json","type":"object","properties":{"a":{"$ref":"other.json"}}}`,
		"ref-dynamic":    `{"type":"object","properties":{"a":{"$dynamicRef":"` + url + `/d.json#node"}}}`,
		"ref-relative":   `{"type":"object","properties":{"a":{"$ref":"../../../etc/passwd"}}}`,
	}
	tree := t.TempDir()
	install(t, tree, "good", "1.0.0", "", nil, nil)
	for skill, schema := range cases {
		install(t, tree, skill, "1.0.0", hostile["raw"], map[string]string{"RAW_MODE": "ref", "RAW_SCHEMA": schema}, nil)
	}
	install(t, tree, "ref-output", "1.0.0", hostile["raw"], map[string]string{"RAW_MODE": "ref",
		"RAW_OUTPUT_SCHEMA": `{"type":"object","properties":{"a":{"$ref":"` + url + `/out.json"}}}`}, nil)
	install(t, tree, "ref-local", "1.0.0", hostile["raw"], map[string]string{"RAW_MODE": "ref",
		"RAW_SCHEMA": `{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`}, nil)
	cases["ref-output"] = ""

	start := time.Now()
	h := startHost(t, tree, hostOpts{args: []string{"--max-parallel-starts", "16"}})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("loading took %v: something waited on a file or the network", took)
	}
	for skill := range cases {
		s := h.skill(skill)
		v, _ := s.version("1.0.0")
		if v.State != "failed" || !strings.Contains(v.LastError, "not allowed") {
			t.Errorf("%s: %s, want failed saying external references are not allowed", skill, v.reason())
			continue
		}
		t.Logf("%s: %s", skill, v.LastError)
	}
	// A reference inside the schema itself is fine.
	h.wantCall("ref-local.ref", `{"a":1}`, 200, "")
	h.wantCall("ref-local.ref", `{"a":"x"}`, 400, "invalid_arguments")
	h.wantCall("good.echo", `{}`, 200, "")
	if n := conns.Load(); n != 0 {
		t.Errorf("the host made %d connections to the schema URL", n)
	}
	// Nobody ever opened the FIFO for reading: a non-blocking open for
	// writing fails with ENXIO exactly when there is no reader.
	fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		syscall.Close(fd)
		t.Errorf("someone holds the FIFO open for reading")
	} else if !errors.Is(err, syscall.ENXIO) {
		t.Errorf("probe FIFO: %v", err)
	}

}
