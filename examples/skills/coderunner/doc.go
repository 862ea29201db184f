// Command coderunner is an example skillhost skill that runs JavaScript in
// an embedded interpreter (github.com/dop251/goja): the "runner" of a
// code-interpreter group chat, which executes the code block another agent
// wrote and reports what it printed, the value of its last expression, or
// the error.
//
// Each call gets a fresh interpreter with nothing but the ECMAScript
// built-ins and a console object: there is no require, no module loader, no
// file system, no network, no timers and no access to the process. A call is
// bounded by a wall-clock timeout (vm.Interrupt), a cap on what it prints
// and returns, a cap on call depth, guards on the built-ins that allocate a
// large string in one step, and a heap watchdog. See README.md for what each
// limit does and does not enforce.
package main
