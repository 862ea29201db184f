// Package proctree finds and kills the processes descended from a skill,
// also the ones that left its process group (setsid, setpgid), which a
// signal to the group misses. The SDK uses it when a skill's host dies, and
// the host uses it to leave no process of a skill behind. It reads Linux's
// /proc; elsewhere the process table is empty and Kill signals the process
// groups alone.
package proctree
