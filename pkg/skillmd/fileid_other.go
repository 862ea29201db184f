//go:build !unix

package skillmd

import (
	"io/fs"
	"os"
)

const openFlags = os.O_RDONLY

// fileID is empty where the platform has no inode; Open then checks type and size only.
type fileID struct{ dev, ino uint64 }

func fileIDOf(fs.FileInfo) fileID { return fileID{} }
