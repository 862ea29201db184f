// Package chart holds the tests of the skillhost Helm chart in ./skillhost.
// It is a Go module of its own so that the root module does not depend on
// Helm and the Kubernetes API types: the tests render the chart with Helm's
// engine, decode every object strictly into the Kubernetes types, and check
// what a cluster would only reveal at the worst moment (probes, the drain
// arithmetic, selectors, secret file modes, and that every flag the pod
// passes is one `host serve` accepts). No cluster runs here; see
// docs/operations.md, "Kubernetes".
package chart
