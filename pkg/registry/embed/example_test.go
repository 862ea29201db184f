package embed

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/registry"
)

// A registry whose searches are reranked by an embeddings endpoint. The
// endpoint here is the tests' fake, which knows that a vehicle is a car and
// to hire is to rent; the text ranking alone puts the car wash first.
func Example() {
	endpoint := newFake() // any OpenAI-compatible /v1/embeddings
	defer endpoint.Close()

	rr, err := New(Config{BaseURL: endpoint.URL + "/v1", Model: "fake-embed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rr.Close()
	reg := registry.New(registry.Config{Rerank: rr})
	if err := rr.Watch(reg); err != nil { // embed new tools in the background
		fmt.Println(err)
		return
	}
	if _, err := reg.Put(travelSkill("1.0.0")); err != nil {
		fmt.Println(err)
		return
	}
	for _, h := range reg.Snapshot().Search(registry.Query{Text: "rent a car"}) {
		fmt.Printf("%s %.2f\n", h.Tool.Name, h.Score)
	}
	// Output:
	// travel.book_vehicle 0.70
	// travel.car_wash 0.62
}
