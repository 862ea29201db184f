// Package e2e drives a real `host serve` process over real HTTP, with real
// skill processes on a real skills tree: the daemon as an operator sees it.
package e2e
