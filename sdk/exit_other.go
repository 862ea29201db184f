//go:build !unix

package sdk

func handleTermination() {}

func exitGroup(code int) { exit(code) }
