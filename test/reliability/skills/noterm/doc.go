// Command noterm is a raw skill (no SDK) that ignores SIGTERM and does not
// watch its parent: the host's parent-death signal (SIGTERM) cannot end it.
package main
