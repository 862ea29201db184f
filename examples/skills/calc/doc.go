// Command calc is an example skillhost skill: safe arithmetic evaluation
// with a hand-written parser (no eval, no code execution) and unit
// conversion for length, mass, temperature, time and data size.
package main
