// Package reliability holds the host's reliability and security suite: a
// bounded chaos soak against a real daemon, hostile and broken skills (built
// for the suite under skills/), per-skill resource limits, schemas that try
// to load files or URLs, bad manifests and bad HTTP input, and faults of the
// host itself (SIGKILL, restart, a read-only or full state folder).
//
// Everything runs against real processes: TestMain builds the host, the
// test skill and every hostile skill once. docs/reliability.md states the
// guarantees these tests check and the figures of the last soak.
//
// Environment: SOAK_DURATION (default 30s, 10s with -short) sets the soak's
// length, SOAK_REPORT names a file to write its summary table to, and
// SKILLHOST_KNOWN_BUGS=1 turns the checks of known, reported weaknesses
// from log lines into failures. The suite is Linux-only (/proc, prlimit,
// mount); elsewhere the package is empty.
package reliability
