package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/test/reliability/skills/internal/kit"
)

func main() {
	switch os.Getenv("GARBAGE_WHEN") {
	case "before":
		fmt.Println("Welcome to garbage skill v0.0.1! Loading plugins...")
		fmt.Println("1|1|tcp|127.0.0.1:1|grpc")
	case "fakeaddr":
		// Well formed, but the address is the skill's choice: the host must
		// fail the start, not hang on it.
		fmt.Println("1|1|tcp|127.0.0.1:1|grpc")
		time.Sleep(time.Hour)
	}
	var spewing sync.Once
	s := sdk.New(kit.Name(), kit.Version(), "Garbage: serves while writing junk to its stdout and stderr.")
	sdk.Tool(s, "echo", "Answer with the pid.", func(ctx context.Context, in struct{}) (map[string]int, error) {
		if os.Getenv("GARBAGE_WHEN") == "" || os.Getenv("GARBAGE_WHEN") == "after" {
			// Not on a timer from start: on a loaded machine the handshake
			// can take longer than any sleep, and junk before it is the
			// "before" case.
			spewing.Do(func() { go spew() })
		}
		fmt.Println("junk on os.Stdout during a call")
		return map[string]int{"pid": os.Getpid()}, nil
	}, sdk.ReadOnly())
	s.Serve()
}

func spew() {
	raw := os.NewFile(1, "fd1") // the real stdout, which the host read the handshake from
	junk := []string{
		"1|1|tcp|127.0.0.1:9|grpc\n",
		"\x00\x01\x02\xff\xfe binary junk \x1b[31m red \x1b[0m\n",
		strings.Repeat("A", 200<<10) + "\n", // over bufio.Scanner's token limit
	}
	for i := 0; i < 20; i++ {
		for _, j := range junk {
			raw.WriteString(j)
		}
		fmt.Fprintln(os.Stdout, "junk via os.Stdout", i)
		fmt.Fprintf(os.Stderr, "{\"@level\":\"error\",\"@message\":\"junk %d %s\"}\n", i, strings.Repeat("e", 1000))
		fmt.Fprintln(os.Stderr, "not json at all \xff\xfe", i)
		time.Sleep(50 * time.Millisecond)
	}
}
