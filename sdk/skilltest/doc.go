// Package skilltest runs a skill in a test, two ways.
//
// [Start] serves a *sdk.Skill inside the test process, over real gRPC on a
// local socket, with the server the SDK's Serve builds and a client set up
// as the host's, so a unit test exercises exactly the encoding, schema and
// error paths the host will see, with no build step.
//
// [Exec] launches a built skill binary as a real subprocess through
// go-plugin, the way skillhost does, for tests of the handshake, stdout
// hygiene and process lifetime. [Build] compiles a main package for it.
package skilltest
