// Package sdk is everything a skill author imports to build a skill for
// skillhost.
//
// A skill is a small program that serves typed tools. The author declares
// each tool with [Tool], giving a handler func(ctx, In) (Out, error); the SDK
// infers the input and output JSON Schemas from the Go types In and Out (json
// tags; `jsonschema_description` for descriptions, since the description key
// of the `jsonschema` tag ends at the first comma; `jsonschema:"enum=a,enum=b"`
// for enums; omitempty for optional fields), so the schema the model sees can
// never drift from the code that decodes it.
//
// [Skill.Serve] speaks hashicorp/go-plugin over gRPC. It keeps stdout clean
// for go-plugin's handshake (what a handler prints reaches the host's log), sends
// logs to the host through hclog, turns panics into tool errors, passes the
// host's deadline and cancellation to each handler's ctx, and exits when the
// host goes away, even if the host was killed with SIGKILL.
//
// A handler can call other hosted tools through the host with [Call] and
// [CallAs], given its ctx: the host runs the nested call under the scope of
// the call it is made from, and only for tools listed in [Skill.Uses] (the
// manifest's "uses"). [WithCaller] stands in for the host in unit tests.
//
// Run with --manifest, a skill binary prints its manifest skeleton, which
// scripts/build-skills.sh completes with the entrypoint's sha256.
package sdk
