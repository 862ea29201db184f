// Package skillpb is the skill protocol's generated code: the messages and
// the gRPC service (Describe, Invoke) between skillhost and a skill
// process, carried by hashicorp/go-plugin. skill.proto is the source and
// says why arguments and results travel as raw JSON bytes;
// scripts/gen-proto.sh regenerates skill.pb.go and skill_grpc.pb.go with
// pinned generator versions. Skill authors use package sdk, not this one.
package skillpb
