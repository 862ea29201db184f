package fleet_test

import (
	"fmt"

	"github.com/skillhost/skillhost/pkg/fleet"
)

// The --state flag names etcd's endpoints and the fleet's key prefix; a
// password never stands in it.
func ExampleParseEtcdURL() {
	c, err := fleet.ParseEtcdURL("etcds://ops@etcd1:2379,etcd2:2379/prod/skills")
	fmt.Println(c.Endpoints, c.Prefix, c.TLS, c.Username, err)
	_, err = fleet.ParseEtcdURL("etcd://ops:hunter2@etcd1:2379")
	fmt.Println(err != nil)
	// Output:
	// [etcd1:2379 etcd2:2379] /prod/skills true ops <nil>
	// true
}
