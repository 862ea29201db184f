// Command exitnow is a skill that dies young: EXIT_WHEN=start (the default)
// exits before the handshake; EXIT_WHEN=describe completes the handshake and
// exits when the host asks it to describe itself.
package main
