package sdk

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Codec is the skill protocol's protobuf codec, used by the SDK's server
// (GRPCServerFactory) and by the host's calls. It encodes exactly as gRPC's
// own "proto" codec does; only its buffers differ. gRPC's default pool has
// tiers of 256 B, 4, 16 and 32 KiB and 1 MiB, and zeroes a buffer's whole
// capacity when it hands it out, so a message of 33 KiB to 1 MiB (a 64 KiB
// result) cost a 1 MiB clear where it is marshalled (the skill) and again
// where it is materialized to be unmarshalled (the host): about a fifth of
// the host's CPU and a quarter of the skill's on 64 KiB calls. This pool
// has a tier at every power of two up to 1 MiB, so a buffer is at most
// twice its message. ForceCodecV2 and ForceServerCodecV2, which install it,
// are experimental gRPC APIs; without them the result is the same, only
// slower.
var Codec encoding.CodecV2 = codec{}

// codecPool zeroes like gRPC's default pool (nothing else changes), but
// has a tier at every power of two from 256 B to 1 MiB; larger messages
// get their own buffers, as from the default pool.
var codecPool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	if err != nil {
		panic(err)
	}
	return p
}()

type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, not a proto.Message", v)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // safe: Size just ran
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := codecPool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		codecPool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, codecPool)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, not a proto.Message", v)
	}
	buf := data.MaterializeToBuffer(codecPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
