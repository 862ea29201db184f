// Package fileio reads and writes the host's small files safely. A secret
// (the API token, a model or embeddings key) is opened once and judged on
// the open file, so nothing can swap the file between the check and the
// read; a state file is replaced atomically (google/renameio: a temp file
// beside it, fsync, rename), so a reader never sees half of one and a
// crash leaves the old file or the new, never a mix.
package fileio
