// Command skillbench runs skillhost's performance suite (internal/bench)
// and prints a markdown report. scripts/bench.sh builds the binaries it
// needs and runs it; run that rather than this.
package main
