// Package metrics exposes skillhost's Prometheus metrics. Counters and
// histograms are fed by the registry's and the loader's hooks; gauges that
// describe current state (instance states, in-flight calls, registry size)
// are computed at scrape time from the source of truth, so they can never
// drift from what /v1/skills shows.
package metrics
