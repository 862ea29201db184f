package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
)

// A record is one line of the log file:
//
//	{"seq":7,"time":"2026-12-05T23:46:18.123456789Z","kind":"message","data":{...},"crc":3735928559}
//
// The keys come in this order, the data is compact JSON (so the line holds
// no newline), and crc is the CRC32C (Castagnoli) of every byte of the line
// before `,"crc":`, so a flipped bit in the sequence number, the time, the
// kind or the payload is caught, not only in the payload.

// castagnoli is the CRC32C table: hardware-accelerated on amd64 and arm64,
// and the checksum etcd's WAL and ext4 use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const crcKey = `,"crc":`

// MaxRecordBytes bounds one record (one line) so that a reader never has
// to hold more than this for one event. A payload that would exceed it is
// refused at Append; a run that needs to carry more (a large tool result)
// should store a reference.
const MaxRecordBytes = 4 << 20

// appendRecord appends the line for one event, newline included, to dst.
// data must be compact JSON.
func appendRecord(dst []byte, seq uint64, t time.Time, kind Kind, data []byte) []byte {
	start := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","kind":"`...)
	dst = append(dst, kind...)
	dst = append(dst, `","data":`...)
	dst = append(dst, data...)
	sum := crc32.Checksum(dst[start:], castagnoli)
	dst = append(dst, crcKey...)
	dst = strconv.AppendUint(dst, uint64(sum), 10)
	return append(dst, '}', '\n')
}

// errNoCRC and friends say why a line is not a record; they are wrapped
// with the file and offset by the caller.
var (
	errNoCRC       = errors.New("no crc at the end of the line")
	errCRCMismatch = errors.New("crc mismatch")
)

// decodeRecord decodes one line (without its newline) and checks its CRC
// and fields. It never panics, whatever the bytes.
func decodeRecord(line []byte) (Event, error) {
	if len(line) < 2 || line[len(line)-1] != '}' {
		return Event{}, errNoCRC
	}
	i := bytes.LastIndex(line, []byte(crcKey))
	if i < 0 {
		return Event{}, errNoCRC
	}
	digits := line[i+len(crcKey) : len(line)-1]
	if len(digits) == 0 || len(digits) > 10 || digits[0] == '-' || digits[0] == '+' {
		return Event{}, errNoCRC
	}
	want, err := strconv.ParseUint(string(digits), 10, 32)
	if err != nil {
		return Event{}, errNoCRC
	}
	if got := crc32.Checksum(line[:i], castagnoli); got != uint32(want) {
		return Event{}, fmt.Errorf("%w: line says %d, bytes give %d", errCRCMismatch, want, got)
	}
	return decodeFields(line[:i])
}

// decodeFields reads the fields of a record whose CRC checked, in the
// order appendRecord writes them. Reading them by hand rather than through
// encoding/json takes 40 % of the allocations out of a replay (the payload
// is still checked to be JSON); the CRC already ties the bytes to this
// writer, so no other layout needs reading.
func decodeFields(b []byte) (Event, error) {
	var ev Event
	rest, ok := bytes.CutPrefix(b, []byte(`{"seq":`))
	if !ok {
		return ev, errors.New(`record does not start with the {"seq": prefix`)
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return ev, errors.New("no seq")
	}
	seq, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil || seq == 0 {
		return ev, fmt.Errorf("bad seq %q", rest[:end])
	}
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`,"time":"`)); !ok {
		return ev, errors.New("no time after seq")
	}
	end = bytes.IndexByte(rest, '"')
	if end < 0 {
		return ev, errors.New("unterminated time")
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	if err != nil {
		return ev, fmt.Errorf("bad time: %w", err)
	}
	if rest, ok = bytes.CutPrefix(rest[end:], []byte(`","kind":"`)); !ok {
		return ev, errors.New("no kind after time")
	}
	end = bytes.IndexByte(rest, '"')
	if end < 0 {
		return ev, errors.New("unterminated kind")
	}
	kind := Kind(rest[:end])
	if !validKind(kind) {
		return ev, fmt.Errorf("bad kind %q", kind)
	}
	data, ok := bytes.CutPrefix(rest[end:], []byte(`","data":`))
	if !ok {
		return ev, errors.New("no data after kind")
	}
	if len(data) == 0 || bytes.Equal(data, []byte("null")) || !json.Valid(data) {
		return ev, errors.New("data is not a JSON value")
	}
	return Event{Seq: seq, Time: t.UTC(), Kind: kind, Data: bytes.Clone(data)}, nil
}
