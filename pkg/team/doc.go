// Package team is the data layer of agent teams: a lead and persistent
// teammates that talk through durable mailboxes and share a task board.
// It makes no model calls and serves no HTTP; an agent-loop driver runs
// each member's loop on top of it, and the API shows it.
//
// Everything a team is lives in files under <state>/teams/<team-id>/, all
// of them pkg/runs logs (CRC'd JSON Lines, fsynced before a call returns):
// the team log (membership, statuses, protocol requests, usage, the task
// board), one inbox per member, and one log per member where its loop
// records what it consumed (and, for the driver, its conversation). The
// team's state is a replay of its team log, so a team survives a daemon
// restart and goes on.
//
// Delivery is at-least-once with de-duplication, in the manner of NATS
// JetStream's consumers: a message stays in its inbox until the receiver
// has logged it as consumed in its own log (Consume), and the inbox
// cursor is derived from that log, so a SIGKILL at any moment loses no
// message and delivers none twice. A sender that supplies message ids may
// retry a send: an id already in the inbox is not appended again.
// Requests (shutdown, plan approval) carry request ids whose state the
// team enforces; a message that cannot be delivered comes back to its
// sender as a bounce; the task board's claims are leases that expire, as
// in Claude Code's agent teams.
//
// An idle member costs no goroutine and no file descriptor: the package
// starts no goroutines, parks the logs of members that are not running,
// and tells a driver which members have work through Ready and Take.
package team
