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
// Keys, under the prefix of the --state URL (default /skillhost):
//
//	<prefix>/state/<skill>  JSON loader.Decision; absent: no decision
//	<prefix>/hosts/<id>     JSON HostRecord, under the host's lease
package fleet
