//go:build unix

package skillmd

import (
	"io/fs"
	"os"
	"syscall"
)

// openFlags opens served files non-blocking, so a FIFO swapped in for a file returns at once
// (and then fails the regular-file check) instead of waiting for a writer forever.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// fileID is a file's identity: a file replaced by rename or by a symlink gets a new one.
type fileID struct{ dev, ino uint64 }

func fileIDOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} // Dev and Ino are not uint64 on every unix
}
