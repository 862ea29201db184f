// Command garbage is a hostile skill that pollutes the handshake channel.
//
// GARBAGE_WHEN=before prints text on stdout before the handshake line;
// GARBAGE_WHEN=fakeaddr prints a well-formed handshake that names an address
// nothing serves on; GARBAGE_WHEN=after (the default) serves normally and,
// from its first call on (so surely after the handshake), writes junk to the real stdout (fd 1: fake handshake lines, binary,
// one line far over bufio.Scanner's 64 KiB), to os.Stdout (which go-plugin
// forwards) and to stderr (which the host logs).
package main
