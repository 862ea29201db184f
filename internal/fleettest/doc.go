// Package fleettest runs what a fleet needs inside a test process, on
// loopback: a real single-member etcd (go.etcd.io/etcd/server/v3/embed)
// and an OCI registry (go-containerregistry's pkg/registry), so the
// fleet's tests exercise the same transactions, watches, leases and
// registry protocol as production without binaries to install.
package fleettest
