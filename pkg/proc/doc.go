// Package proc is the host's process toolkit: what it takes to run a
// third-party binary as a skill process and to make sure it goes away.
//
// It holds the pieces that act on processes rather than on skills: the
// process attributes of a skill (its own process group, a parent-death
// signal, the account it runs as: SetProcAttr, SkillUser), the capabilities
// a root host withholds from it (DropSkillCaps) and the operating-system
// limits its manifest asks for (ApplyRlimits); exit detection on a pidfd
// (WaitExit); the verified private copies that skills run from (BinCache);
// the keys of the mutual TLS between host and skill (ClientCert,
// ServerIdentity); and the two guards that take a skill's processes down
// with the host: the watchdog process (Reaper, MaybeRunReaper) and the
// orphan sweeper of a child subreaper (Sweeper). pkg/loader decides when a
// skill starts and stops; this package is how.
//
// Importing it has no side effects. Two functions change the whole
// process, and only a program that owns its process calls them: Harden
// (not dumpable) and NewSweeper (child subreaper). A binary that starts
// itself as the watchdog (ReaperCommand) calls MaybeRunReaper first thing
// in main.
package proc
