// Package kit is what the reliability suite's hostile skills share: their
// identity (from the manifest's env, as internal/testskill does) and a way
// to serve a hand-written skillpb server, which lets a skill break the
// protocol in ways the SDK's typed API never would.
package kit
