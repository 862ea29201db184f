// Command host is the skillhost daemon and its command line.
//
//	host serve --skills ./skills --listen 127.0.0.1:7070
//	host validate PATH
//	host skills | tools | call | rescan | enable | disable | pin | unpin | events
//	host chat [--profile P] "question"
//	host mcp [--skills DIR | --addr URL]
//	host eval-prefilter --catalog FILE --queries FILE
//
// It only parses flags and handles signals: host serve and the embedded
// host mcp turn their flags into a host.Config and run pkg/host, which
// builds and stops the daemon; the other commands are clients of a running
// daemon's API. The package holds no state of its own and registers
// nothing at init.
//
// main calls proc.MaybeRunReaper before anything else, because a daemon
// started from main owns its process (host.Config.OwnsProcess) and starts
// this very binary again as its skills' watchdog. Tests run the commands
// through run, in their own process, which a daemon then leaves as it
// found it.
package main
