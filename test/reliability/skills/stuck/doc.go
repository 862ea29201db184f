// Command stuck is a hostile skill that never completes the handshake and
// ignores SIGTERM and SIGINT: only SIGKILL ends it.
package main
