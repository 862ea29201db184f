package main

import "github.com/skillhost/skillhost/pkg/console"

// The operator console: static files at /ui/ (see docs/console.md). The
// files hold no data, so the token middleware lets GET /ui/ through; the
// page sends the token on every API call it makes.
func init() {
	mounts = append(mounts, mount{name: "console", setup: func(d *daemon) error {
		d.Server.Handle("GET "+console.Prefix, console.Handler())
		return nil
	}})
}
