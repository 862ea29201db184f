// Package manifest reads and judges the skills tree: skills/<name>/<version>/ folders that each
// hold a manifest.json and the binary it describes.
//
// It is the one place that decides whether a version folder may be served. Everything the loader
// later trusts (the name, the version, the entrypoint path, the checksum, the environment, the
// limits) is checked here first, against an embedded JSON Schema and then by code that looks at
// the folder itself, and every problem is reported at once with a JSON path so an author fixes
// a manifest in one round instead of one error at a time. The package never launches anything
// and never writes to the tree; it only reads, so it can run as often as the watcher likes.
//
// A version folder ends up in one of three states. Valid means it may be served. Invalid means
// it is wrong and stays wrong until someone edits it. Incomplete is kept apart from invalid
// because the tree is written by ordinary file copies: while a copy is in progress the manifest
// or the binary may be missing, truncated or not yet matching its checksum. Calling that
// "failed" would make the host shout about, and give up on, a version that is about to become
// fine; calling it incomplete tells the loader to keep the old version serving, stay quiet and
// look again on the next change.
package manifest
