// Command hang is a skill whose "hang" tool never returns and ignores
// cancellation, the way a handler stuck in a syscall or a busy loop would.
package main
