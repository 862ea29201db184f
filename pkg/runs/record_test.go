package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	when := time.Date(2026, 12, 5, 23, 46, 18, 123456789, time.UTC)
	data := []byte(`{"sender":"coder","content":"line one\nline \"two\""}`)
	line := appendRecord(nil, 7, when, KindMessage, data)
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("record is not one line: %q", line)
	}
	if !json.Valid(line) {
		t.Fatalf("record is not JSON: %s", line)
	}
	ev, err := decodeRecord(line[:len(line)-1])
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 7 || !ev.Time.Equal(when) || ev.Kind != KindMessage || !bytes.Equal(ev.Data, data) {
		t.Fatalf("decoded %+v from %s", ev, line)
	}
	// The CRC covers the whole line before it, not only the payload.
	prefix := line[:bytes.LastIndex(line, []byte(crcKey))]
	if got := crc32.Checksum(prefix, castagnoli); !strings.Contains(string(line), crcKey+itoa(got)+"}") {
		t.Fatalf("crc %d not in %s", got, line)
	}
}

func itoa(v uint32) string { b, _ := json.Marshal(v); return string(b) }

// TestDecodeRecordRejects flips every byte of a good record in turn and
// checks that the decoder refuses each result: the CRC covers seq, time,
// kind and payload alike.
func TestDecodeRecordRejects(t *testing.T) {
	line := appendRecord(nil, 3, time.Unix(1, 0), KindStop, []byte(`{"reason":"max_rounds"}`))
	line = line[:len(line)-1]
	for i := range line {
		bad := bytes.Clone(line)
		bad[i] ^= 0x01
		if ev, err := decodeRecord(bad); err == nil {
			t.Errorf("byte %d flipped (%q): decoded %+v", i, bad, ev)
		}
	}
	for _, tc := range []struct{ name, line string }{
		{"empty", ""},
		{"no crc", `{"seq":1}`},
		{"negative crc", `{"seq":1,"crc":-1}`},
		{"crc too big", `{"seq":1,"crc":99999999999}`},
		{"zeros", "\x00\x00\x00\x00"},
	} {
		if _, err := decodeRecord([]byte(tc.line)); err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
	}
	// A record whose CRC matches but whose fields do not make an event.
	for _, tc := range []struct{ name, body string }{
		{"seq zero", `{"seq":0,"time":"2026-01-01T00:00:00Z","kind":"stop","data":{}`},
		{"no time", `{"seq":1,"kind":"stop","data":{}`},
		{"bad kind", `{"seq":1,"time":"2026-01-01T00:00:00Z","kind":"Stop!","data":{}`},
		{"null data", `{"seq":1,"time":"2026-01-01T00:00:00Z","kind":"stop","data":null`},
	} {
		b := []byte(tc.body)
		b = append(b, crcKey+itoa(crc32.Checksum(b, castagnoli))+"}"...)
		if _, err := decodeRecord(b); err == nil {
			t.Errorf("%s: decoded %s", tc.name, b)
		}
	}
	if _, err := decodeRecord([]byte(`{"seq":1,"crc":5}`)); !errors.Is(err, errCRCMismatch) {
		t.Errorf("wrong crc: %v, want errCRCMismatch", err)
	}
}

func TestValidKind(t *testing.T) {
	for k, want := range map[Kind]bool{
		"message": true, "tool_call": true, "team.message_sent": true, "v2": true,
		"": false, "Message": false, ".x": false, "x.": false, "a..b": false, "a.b.c": false,
		"_x": false, "a.1": false, "has space": false, `q"`: false, Kind(strings.Repeat("a", 65)): false,
	} {
		if got := validKind(k); got != want {
			t.Errorf("validKind(%q) = %v, want %v", k, got, want)
		}
	}
}

// FuzzDecodeRecord feeds the decoder arbitrary lines. It must never
// panic, and whatever it accepts must encode back to a line it decodes to
// the same event.
func FuzzDecodeRecord(f *testing.F) {
	good := appendRecord(nil, 1, time.Unix(0, 5), KindMessage, []byte(`{"sender":"a","content":"hi"}`))
	f.Add(good[:len(good)-1])
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"seq":1,"crc":0}`))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := decodeRecord(line)
		if err != nil {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, ev.Data); err != nil {
			t.Fatalf("accepted data that is not JSON: %q", ev.Data)
		}
		again := appendRecord(nil, ev.Seq, ev.Time, ev.Kind, compact.Bytes())
		ev2, err := decodeRecord(again[:len(again)-1])
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", again, err)
		}
		if ev2.Seq != ev.Seq || !ev2.Time.Equal(ev.Time) || ev2.Kind != ev.Kind || !bytes.Equal(ev2.Data, compact.Bytes()) {
			t.Fatalf("round trip changed %+v into %+v", ev, ev2)
		}
	})
}
