//go:build !unix

package manifest

import "io/fs"

func fileID(fs.FileInfo) (dev, ino uint64, ctimeNS int64) { return 0, 0, 0 }

func fileOwner(fs.FileInfo) int { return -1 }
