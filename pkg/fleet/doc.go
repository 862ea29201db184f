// Package fleet lets several skillhost daemons act as one: the operator's
// decisions (disable, pin) live in etcd instead of each host's state file,
// every host watches them and converges, and each host registers itself
// under a lease so the fleet can be seen from any of them.
//
// Nothing here is home-made consensus: etcd's compare-and-swap
// transactions keep two operators from overwriting each other unseen, its
// watches carry changes to every host, and its leases make a dead host
// leave on its own. The package implements the interfaces the loader
// consumes (loader.StateStore, loader.StateNotifier); pkg/host wires it in
// only when a fleet flag is given, so one machine stays as simple as it
// was.
//
// Skill versions can travel as OCI artifacts (oras-go): Push packs a
// version folder and records its digest as the skill's desired version; a
// Puller on every host fetches it by digest, verifies it, unpacks it
// atomically into the tree and, one host at a time behind the loader's
// health, swaps; a version that fails rolls the fleet back (rollout.go).
//
// Keys, under the prefix of the --state URL (default /skillhost):
//
//	<prefix>/state/<skill>        JSON loader.Decision; absent: no decision
//	<prefix>/hosts/<id>           JSON HostRecord, under the host's lease
//	<prefix>/desired/<skill>      JSON Desired: the artifact every host should have
//	<prefix>/rollout/<skill>/<n>  rollout slots (concurrency.Mutex), under the holder's lease
package fleet
