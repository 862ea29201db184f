package mcp

import (
	"net/url"

	"github.com/skillhost/skillhost/pkg/registry"
)

// Filter selects the subset of the registry one endpoint offers: the
// registry's one filter type, which the HTTP API and agent profiles use
// too. The zero Filter offers every tool.
type Filter = registry.Filter

// ParseFilter reads an endpoint's filter from its query parameters with
// [registry.ParseFilter]. Parameters other than the filter's are ignored,
// so a client may add its own.
func ParseFilter(q url.Values) (Filter, error) { return registry.ParseFilter(q) }
