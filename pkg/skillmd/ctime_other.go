//go:build !linux

package skillmd

import "io/fs"

// ctimeOf is 0 where the change time's field differs by platform or does not exist; a Cache
// then keys on the modification time, device and inode only.
func ctimeOf(fs.FileInfo) int64 { return 0 }
