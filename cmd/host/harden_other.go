//go:build !linux

package main

func hardenProcess() error { return nil }
