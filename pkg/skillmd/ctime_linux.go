package skillmd

import (
	"io/fs"
	"syscall"
)

// ctimeOf is the file's change time, which a rewrite in place moves even when it restores the
// modification time (cp -p, rsync -t), so a Cache entry cannot go stale that way.
func ctimeOf(fi fs.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Ctim.Sec*1e9 + st.Ctim.Nsec
}
