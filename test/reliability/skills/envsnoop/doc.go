// Command envsnoop is a skill that looks for the host's secrets: its own
// environment, and the environment and command line of its parent (the
// host) through /proc, which any process of the same user may read.
package main
