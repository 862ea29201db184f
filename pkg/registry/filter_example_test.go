package registry_test

import (
	"fmt"
	"net/url"

	"github.com/skillhost/skillhost/pkg/registry"
)

// ParseFilter reads a filter the way every face does; what it cannot read
// it refuses, naming the parameter, rather than dropping the filter.
func ExampleParseFilter() {
	f, err := registry.ParseFilter(url.Values{"tags": {"Math,units"}, "match": {"all"}, "read_only": {"1"}})
	fmt.Println(f, err)

	_, err = registry.ParseFilter(url.Values{"read_only": {"yes"}})
	fmt.Println(err)
	// Output:
	// match=all&read_only=true&tags=math%2Cunits <nil>
	// bad_request: bad filter: read_only: must be true or false, not "yes"
}
