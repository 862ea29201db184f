// Command forker is a skill whose "fork_and_die" tool starts children, one
// of which may leave the skill's process group (setsid), answers with their
// pids and then the skill dies without cleaning up. Its "fork" tool starts
// the same children and lives on.
package main
