// Command host is the skillhost daemon and its command line.
//
//	host serve --skills ./skills --listen 127.0.0.1:7070
//	host validate PATH
//	host skills | tools | call | rescan | enable | disable | pin | unpin | events
//	host chat [--profile P] "question"
//	host mcp [--skills DIR | --addr URL]
//	host eval-prefilter --catalog FILE --queries FILE
//
// It only parses flags, wires packages together and handles signals; the
// behaviour lives in pkg/, where tests can reach it.
package main
