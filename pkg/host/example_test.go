package host_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/skillhost/skillhost/pkg/host"
)

// A daemon over a skills tree, run until its context ends.
func Example() {
	skills, _ := os.MkdirTemp("", "skills-")
	defer os.RemoveAll(skills)
	h, err := host.New(host.Config{Skills: skills, Listen: "127.0.0.1:0", Console: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- h.Run(ctx) }()
	<-h.Ready()
	if resp, err := http.Get("http://" + h.Addr().String() + "/readyz"); err != nil {
		fmt.Println(err)
	} else {
		resp.Body.Close()
		fmt.Println("readyz:", resp.Status)
	}
	stop()
	fmt.Println("stopped:", <-ran)
	// Output:
	// readyz: 200 OK
	// stopped: <nil>
}

// hello is a face of one route.
type hello struct{}

func (hello) Name() string { return "hello" }

func (hello) Mount(m *host.Mount) error {
	m.Handle("GET /v1/hello", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d tools here", m.Registry.Snapshot().Len())
	}))
	return nil
}

// A face of one's own plugs in through Config.Faces and lives as long as
// the host.
func ExampleFace() {
	skills, _ := os.MkdirTemp("", "skills-")
	defer os.RemoveAll(skills)
	h, err := host.New(host.Config{Skills: skills, Listen: "127.0.0.1:0", Faces: []host.Face{hello{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer h.Shutdown(context.Background())
	<-h.Ready()
	resp, err := http.Get("http://" + h.Addr().String() + "/v1/hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b))
	// Output: 0 tools here
}
