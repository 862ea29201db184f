package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/internal/filtertest"
	"github.com/skillhost/skillhost/pkg/registry"
)

// TestFilterTable runs the filter table every face shares against MCP over
// HTTP: the case's parameters go on the endpoint's URL. A refusal is the
// answer to the first POST, in the one error shape; otherwise a client
// session lists the endpoint's tools.
func TestFilterTable(t *testing.T) {
	s := newServer(t, filtertest.Registry(t), nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	filtertest.Run(t, filtertest.Face{List: func(t *testing.T, q url.Values) ([]string, error) {
		endpoint := ts.URL + "/mcp?" + q.Encode()
		req, _ := http.NewRequest(http.MethodPost, endpoint,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 {
			var body struct{ Error *registry.Error }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error == nil {
				t.Fatalf("POST %s: %s with no error body (%v)", endpoint, resp.Status, err)
			}
			if want := registry.CodeBadRequest; body.Error.Code == want && resp.StatusCode != http.StatusBadRequest {
				t.Errorf("POST %s: %s for %s", endpoint, resp.Status, want)
			}
			return nil, body.Error
		}
		cs, err := sdkClient(make(chan struct{}, 8)).Connect(context.Background(),
			&mcpsdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names, nil
	}})
}
