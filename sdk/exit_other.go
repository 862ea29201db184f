//go:build !unix

package sdk

import "os"

func handleTermination() {}

func exitGroup(code int) { os.Exit(code) }
