// Package testenv holds what the host's tests share: building the test
// skill, installing version folders the way an operator would, and counting
// child processes to prove none leaked.
package testenv
