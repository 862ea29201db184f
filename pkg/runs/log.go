package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Log is one append-only file of records: a run's log, or any other
// stream that wants the same guarantees (a team member's inbox). One Log
// value is the file's only writer: OpenLog takes an exclusive lock on the
// file (flock), so a second daemon on the same state folder fails to open
// it instead of interleaving records. Its methods are safe for concurrent
// use; appends are applied in the order they take the log's lock.
//
// The log keeps no events in memory, only the offset of each record (8
// bytes per event), so reading any range back is one pread.
type Log struct {
	path string
	now  func() time.Time

	syncFile func(*os.File) error // (*os.File).Sync; tests count and stall it

	// syncMu is held by the one appender that runs an fsync (and by
	// Close): fsyncs run one at a time, and the others queue behind it to
	// find out whether it covered their records.
	syncMu sync.Mutex

	mu      sync.Mutex    // guards the fields below; never held during an fsync
	f       *os.File      // the locked, append-only descriptor; nil once closed or parked
	closed  bool          // Close was called: appends fail with ErrClosed
	seq     uint64        // last durable sequence number: what readers see
	size    int64         // durable end of the file
	offsets []int64       // offsets[i] is where the durable record with seq i+1 starts
	wseq    uint64        // last written sequence number (durable or not)
	wsize   int64         // written end of the file
	pending []int64       // offsets of the records after seq up to wseq
	err     error         // sticky: a failed write or fsync leaves the file's tail unknown
	changed chan struct{} // closed (and replaced) when records become durable, and at Close
	buf     []byte        // reused encode buffer
	repair  *Repair
}

// LogOptions tune OpenLog. The zero value is ready to use.
type LogOptions struct {
	// Replay, when set, is called with each good record in order while
	// the file is checked, so opening and replaying a run is one read of
	// its file. An error from Replay fails the open.
	Replay func(Event) error
	// Now stamps appended records; time.Now when nil.
	Now func() time.Time
	// MustExist makes OpenLog fail with an error wrapping os.ErrNotExist
	// rather than create a missing file.
	MustExist bool
}

// Repair says what OpenLog cut from the end of a file: a record torn by a
// crash (or bytes appended by something else) that no good record follows.
type Repair struct {
	Offset int64  // where the file now ends
	Cut    int64  // how many bytes were removed
	Reason string // why the first removed line was not a record
}

// CorruptError reports a damaged record that good records follow: not a
// torn tail, so OpenLog refuses to guess and names the place.
type CorruptError struct {
	Path   string
	Offset int64  // byte offset of the damaged line
	After  uint64 // the last good sequence number before it
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("run log %s: corrupt record at byte offset %d (after seq %d): %s",
		e.Path, e.Offset, e.After, e.Reason)
}

// OpenLog opens (or creates) the log at path, checks every record, cuts a
// torn tail, and returns the log ready to append after its last record.
// Creating a file also fsyncs its folder, so the new name survives a crash.
func OpenLog(path string, opts LogOptions) (*Log, error) {
	flag := os.O_RDWR | os.O_APPEND
	if !opts.MustExist {
		flag |= os.O_CREATE
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open run log: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("run log %s: %w", path, err)
	}
	l := &Log{path: path, now: opts.Now, f: f, changed: make(chan struct{}), syncFile: (*os.File).Sync}
	if l.now == nil {
		l.now = time.Now
	}
	if created {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := l.load(opts.Replay); err != nil {
		f.Close()
		return nil, err
	}
	l.wseq, l.wsize = l.seq, l.size
	return l, nil
}

// load reads the whole file once: it indexes good records, hands them to
// replay, and cuts a bad tail. A bad line with a good record after it is a
// CorruptError.
func (l *Log) load(replay func(Event) error) error {
	// A run's log is usually a few KiB: a buffer of its size (up to 64 KiB)
	// saves clearing 64 KiB on every open.
	bufSize := 64 << 10
	if st, err := l.f.Stat(); err == nil && st.Size() < int64(bufSize) {
		bufSize = max(int(st.Size())+1, 512)
	}
	r := bufio.NewReaderSize(io.NewSectionReader(l.f, 0, 1<<62), bufSize)
	var (
		off     int64
		line    []byte
		badOff  int64 = -1
		badWhy  string
		badSeen uint64 // l.seq when the bad line was found
	)
	for {
		var n int64
		var complete, tooLong bool
		var err error
		line, n, complete, tooLong, err = readLine(r, line[:0])
		if err != nil {
			return fmt.Errorf("read run log %s: %w", l.path, err)
		}
		if n == 0 {
			break
		}
		var ev Event
		var why string
		switch {
		case !complete:
			why = "torn record: no newline before the end of the file"
		case tooLong:
			why = fmt.Sprintf("line longer than %d bytes", MaxRecordBytes)
		default:
			var derr error
			ev, derr = decodeRecord(line[:len(line)-1])
			if derr != nil {
				why = derr.Error()
			} else if badOff >= 0 {
				return &CorruptError{Path: l.path, Offset: badOff, After: badSeen,
					Reason: badWhy + "; a good record follows at offset " + strconv.FormatInt(off, 10) + ", so this is not a torn tail and the file was left as it is"}
			} else if ev.Seq != l.seq+1 {
				return &CorruptError{Path: l.path, Offset: off, After: l.seq,
					Reason: fmt.Sprintf("record has seq %d, want %d (a record lost or repeated)", ev.Seq, l.seq+1)}
			}
		}
		if why != "" {
			if badOff < 0 {
				badOff, badWhy, badSeen = off, why, l.seq
			}
			off += n
			continue
		}
		l.offsets = append(l.offsets, off)
		l.seq = ev.Seq
		off += n
		if replay != nil {
			if err := replay(ev); err != nil {
				return fmt.Errorf("run log %s: replay seq %d: %w", l.path, ev.Seq, err)
			}
		}
	}
	l.size = off
	if badOff >= 0 {
		if err := l.f.Truncate(badOff); err != nil {
			return fmt.Errorf("run log %s: cut torn tail at offset %d: %w", l.path, badOff, err)
		}
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("run log %s: sync after cutting torn tail: %w", l.path, err)
		}
		l.repair = &Repair{Offset: badOff, Cut: off - badOff, Reason: badWhy}
		l.size = badOff
	}
	return nil
}

// readLine reads up to and including the next newline into buf. It keeps
// at most MaxRecordBytes+1 bytes of a longer line (reporting tooLong) but
// still counts and consumes all of it. n is 0 only at the end of the file.
func readLine(r *bufio.Reader, buf []byte) (line []byte, n int64, complete, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if len(buf) <= MaxRecordBytes {
			buf = append(buf, chunk...)
		}
		tooLong = n > MaxRecordBytes
		switch {
		case err == nil:
			return buf, n, true, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return buf, n, false, tooLong, nil
		default:
			return buf, n, false, tooLong, err
		}
	}
}

// Path is the file the log writes.
func (l *Log) Path() string { return l.path }

// Repaired says what OpenLog cut from the tail, or nil if the file was whole.
func (l *Log) Repaired() *Repair { return l.repair }

// LastSeq is the sequence number of the last durable record (0 when empty).
func (l *Log) LastSeq() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Append writes the payloads as consecutive records and returns once they
// are on disk. A batch is written with one write and made durable by one
// fsync, so an engine logs a model reply's message, tool calls and usage
// for the cost of one fsync. Appends from several goroutines also share
// fsyncs (group commit, as etcd's WAL and JetStream do): one appender's
// fsync covers every record written before it started, and an appender
// whose records it covered returns without one. A batch is durable as a
// whole when Append returns; a crash during it may leave a prefix of it.
//
// A failed write or fsync leaves the file's tail unknown (after a failed
// fsync the page cache cannot be trusted either), so the log refuses every
// later append; reopening it cuts whatever part of the batch was torn.
func (l *Log) Append(ps ...Payload) ([]Event, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	// Encode outside the lock: concurrent appenders marshal in parallel.
	kinds := make([]Kind, len(ps))
	datas := make([][]byte, len(ps))
	for i, p := range ps {
		p, err := payloadValue(p)
		if err != nil {
			return nil, fmt.Errorf("run log %s: payload %d: %w", l.path, i+1, err)
		}
		kind := p.Kind()
		if !validKind(kind) {
			return nil, fmt.Errorf("run log %s: invalid kind %q: want lowercase words, an extension kind joined by one dot", l.path, kind)
		}
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("run log %s: encode %s payload: %w", l.path, kind, err)
		}
		if bytes.Equal(data, []byte("null")) {
			return nil, fmt.Errorf("run log %s: %s payload encodes to null", l.path, kind)
		}
		// seq (20 digits), time (30), crc (10) and the keys take < 128 bytes.
		if rec := len(data) + len(kind) + 128; rec > MaxRecordBytes {
			return nil, fmt.Errorf("run log %s: %s record is about %d bytes, over the limit of %d", l.path, kind, rec, MaxRecordBytes)
		}
		kinds[i], datas[i] = kind, data
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("run log %s: %w", l.path, ErrClosed)
	}
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return nil, err
	}
	if l.f == nil {
		if err := l.reopen(); err != nil {
			l.mu.Unlock()
			return nil, err
		}
	}
	now := l.now().UTC()
	buf := l.buf[:0]
	evs := make([]Event, len(ps))
	for i := range ps {
		l.pending = append(l.pending, l.wsize+int64(len(buf)))
		seq := l.wseq + uint64(i) + 1
		buf = appendRecord(buf, seq, now, kinds[i], datas[i])
		evs[i] = Event{Seq: seq, Time: now, Kind: kinds[i], Data: datas[i]}
	}
	if cap(buf) <= 64<<10 {
		l.buf = buf
	}
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("run log %s: write failed, appends refused until it is reopened: %w", l.path, err)
		l.mu.Unlock()
		return nil, l.err
	}
	l.wseq += uint64(len(ps))
	l.wsize += int64(len(buf))
	mine := l.wseq
	l.mu.Unlock()

	if err := l.commit(mine); err != nil {
		return nil, err
	}
	return evs, nil
}

// commit returns once the records up to seq are durable, fsyncing them
// unless an fsync that started after they were written already has.
func (l *Log) commit(seq uint64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.seq >= seq {
		l.mu.Unlock()
		return nil
	}
	if l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	f, upto, size := l.f, l.wseq, l.wsize
	l.mu.Unlock()
	// Appenders keep writing during the fsync; the next commit covers them.
	err := l.syncFile(f)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = fmt.Errorf("run log %s: fsync failed, appends refused until it is reopened: %w", l.path, err)
		return l.err
	}
	l.publish(upto, size)
	return nil
}

// publish makes the records written up to seq upto (ending at size)
// visible to readers and wakes followers. l.mu must be held.
func (l *Log) publish(upto uint64, size int64) {
	n := int(upto - l.seq)
	l.offsets = append(l.offsets, l.pending[:n]...)
	l.pending = append(l.pending[:0], l.pending[n:]...)
	l.seq, l.size = upto, size
	close(l.changed)
	l.changed = make(chan struct{})
}

// Read returns the durable records after seq after, oldest first, reading
// at most maxBytes of file (but always one record when there is one;
// maxBytes <= 0 means no limit). It also returns a channel that is closed
// when the log changes after this read, so a follower (an SSE stream, an
// idle team member's inbox) can wait for more without polling or a
// goroutine. Once caught up, Read returns ErrClosed after Close and the
// write error after a failed append, since no record will follow.
func (l *Log) Read(after uint64, maxBytes int) ([]Event, <-chan struct{}, error) {
	l.mu.Lock()
	f, changed, closed, broken := l.f, l.changed, l.closed, l.err
	if after >= l.seq {
		l.mu.Unlock()
		switch {
		case closed:
			return nil, changed, fmt.Errorf("run log %s: %w", l.path, ErrClosed)
		case broken != nil:
			// Nothing more will be appended: say so rather than let a
			// follower wait for ever.
			return nil, changed, broken
		}
		return nil, changed, nil
	}
	from := l.offsets[after]
	last := l.seq
	if maxBytes > 0 {
		// Take records while they fit in the budget, and always one.
		end := func(seq uint64) int64 { // where record seq ends
			if seq == l.seq {
				return l.size
			}
			return l.offsets[seq]
		}
		last = after + 1
		for last < l.seq && end(last+1)-from <= int64(maxBytes) {
			last++
		}
	}
	to := l.size
	if last < l.seq {
		to = l.offsets[last]
	}
	l.mu.Unlock()

	b := make([]byte, to-from)
	err := readAt(f, l.path, b, from)
	if err != nil {
		return nil, changed, fmt.Errorf("read run log %s: %w", l.path, err)
	}
	evs := make([]Event, 0, last-after)
	for off := int64(0); len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		ev, err := decodeRecord(b[:i])
		if err != nil {
			// The bytes were good at open or when appended: something else
			// wrote into the file since.
			return evs, changed, &CorruptError{Path: l.path, Offset: from + off, After: after + uint64(len(evs)), Reason: err.Error()}
		}
		evs = append(evs, ev)
		off += int64(i + 1)
		b = b[min(i+1, len(b)):]
	}
	return evs, changed, nil
}

// readAt reads len(b) bytes at off through f, or through a fresh
// descriptor when the log was closed meanwhile (a finished run's log is
// closed but stays readable).
func readAt(f *os.File, path string, b []byte, off int64) error {
	if f != nil {
		_, err := f.ReadAt(b, off)
		if !errors.Is(err, os.ErrClosed) {
			return err
		}
	}
	rf, err := os.Open(path)
	if err != nil {
		return err
	}
	defer rf.Close()
	_, err = rf.ReadAt(b, off)
	return err
}

// Close releases the file and its lock, after making durable what
// concurrent appends wrote. Reads go on working (through a fresh
// descriptor); appends fail with ErrClosed. Safe to call twice.
func (l *Log) Close() error { return l.letGo(true) }

// Park closes the file's descriptor, and so releases its lock, and drops
// its encode buffer, but keeps the log usable: reads go on through a
// fresh descriptor, and the next Append opens the file again. A team
// parks the logs of its idle members, so a thousand idle members hold no
// descriptor; whoever parks a log must hold another lock that keeps a
// second writer away meanwhile (a team holds its team log's). Parking a
// closed or parked log does nothing.
func (l *Log) Park() error { return l.letGo(false) }

// letGo is Close (for good) or Park (until the next append).
func (l *Log) letGo(forGood bool) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	err := l.release()
	l.buf = nil // a parked log keeps no encode buffer either
	if forGood {
		l.closed = true
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return err
}

// Parked reports whether the log holds no descriptor (parked or closed).
func (l *Log) Parked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f == nil
}

// release makes durable what concurrent appends wrote and closes the
// descriptor. l.syncMu and l.mu must be held.
func (l *Log) release() error {
	if l.f == nil {
		return nil
	}
	var errs []error
	if l.wseq > l.seq && l.err == nil {
		// An appender wrote and has not reached commit yet: it will find
		// its records durable.
		if err := l.syncFile(l.f); err != nil {
			l.err = fmt.Errorf("run log %s: fsync at close failed: %w", l.path, err)
			errs = append(errs, l.err)
		} else {
			l.publish(l.wseq, l.wsize)
		}
	}
	if err := l.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close run log %s: %w", l.path, err))
	}
	l.f = nil
	return errors.Join(errs...)
}

// reopen opens and locks a parked log's file again for an append. The
// file must still end where the log left it: anything else means another
// writer went at it while it was parked, and the log refuses to guess.
// l.mu must be held.
func (l *Log) reopen() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("reopen run log: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return fmt.Errorf("run log %s: %w", l.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("reopen run log %s: %w", l.path, err)
	}
	if st.Size() != l.wsize {
		f.Close()
		return fmt.Errorf("run log %s: the file is %d bytes but the log ended at %d: it changed while the log was parked", l.path, st.Size(), l.wsize)
	}
	l.f = f
	return nil
}

// syncDir fsyncs a folder so that a file or folder just created in it
// survives a crash (the new name lives in the folder, not in the file).
// MkdirSynced makes sure dir is a folder: it creates it (and its parents)
// when missing and syncs its parent, so the new entry survives a crash; a
// file of that name is an error that says so, not a surprise at the first
// append.
func MkdirSynced(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s is not a folder", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return syncDir(filepath.Dir(dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync folder %s: %w", dir, err)
	}
	return nil
}
