//go:build linux

package manifest

import (
	"io/fs"
	"syscall"
)

// fileID is what the hash cache keys on besides path, size and mtime: a file replaced by
// rename gets a new inode, and one rewritten in place with its mtime restored (cp -p, rsync -t)
// still gets a new ctime.
func fileID(fi fs.FileInfo) (dev, ino uint64, ctimeNS int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino), int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
}

// fileOwner returns the owning uid, or -1 where the platform has no such thing.
func fileOwner(fi fs.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}
