package main

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

var keep [][]byte // what "eat" allocated, kept alive

type eatIn struct {
	MiB int `json:"mib" jsonschema:"minimum=0"` // 0: without bound
}

func main() {
	s := sdk.New(kit.Name(), kit.Version(), "Hog: eats memory, burns CPU, opens files.")
	sdk.Tool(s, "eat", "Allocate and touch memory, MiB by MiB; mib 0 means until something stops it.", func(ctx context.Context, in eatIn) (map[string]int, error) {
		for i := 0; in.MiB == 0 || i < in.MiB; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		return map[string]int{"mib": len(keep)}, nil
	})
	sdk.Tool(s, "burn", "Spin on the CPU for ms milliseconds.", func(ctx context.Context, in struct {
		MS int `json:"ms"`
	}) (map[string]int, error) {
		end := time.Now().Add(time.Duration(in.MS) * time.Millisecond)
		n := 0
		for time.Now().Before(end) {
			n++
		}
		return map[string]int{"spins": n}, nil
	})
	sdk.Tool(s, "files", "Open /dev/null until the kernel refuses, report how many, close them.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		var fs []*os.File
		var last error
		for len(fs) < 1<<20 {
			f, err := os.Open(os.DevNull)
			if err != nil {
				last = err
				break
			}
			fs = append(fs, f)
		}
		for _, f := range fs {
			f.Close()
		}
		msg := ""
		if last != nil {
			msg = last.Error()
		}
		return map[string]any{"opened": len(fs), "error": msg}, nil
	})
	sdk.Tool(s, "limits", "Report the process's own resource limits.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		out := map[string]any{"pid": os.Getpid()}
		for name, r := range map[string]int{"data": unix.RLIMIT_DATA, "nofile": unix.RLIMIT_NOFILE, "cpu": unix.RLIMIT_CPU} {
			var l unix.Rlimit
			if err := unix.Getrlimit(r, &l); err == nil {
				out[name] = []uint64{l.Cur, l.Max}
			}
		}
		return out, nil
	}, sdk.ReadOnly())
	s.Serve()
}
