//go:build unix && !linux

package manifest

import (
	"io/fs"
	"syscall"
)

// fileID is what the hash cache keys on besides path, size and mtime: a file replaced by
// rename gets a new inode even when size and mtime happen to match. (ctime is left out here
// because its field name differs between the BSDs.)
func fileID(fi fs.FileInfo) (dev, ino uint64, ctimeNS int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino), 0
}

// fileOwner returns the owning uid, or -1 where the platform has no such thing.
func fileOwner(fi fs.FileInfo) int {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1
	}
	return int(st.Uid)
}
