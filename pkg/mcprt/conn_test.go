package mcprt

import (
	"bufio"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestFrameScanner(t *testing.T) {
	big := strings.Repeat(`x\"y`, 1000)
	for _, tc := range []struct {
		name, frame string
		response    bool
		id          string
	}{
		{"id last, as the TypeScript SDK writes it", `{"result":{"content":[{"type":"text","text":"` + big + `"}]},"jsonrpc":"2.0","id":7}`, true, "7"},
		{"id first", `{"jsonrpc":"2.0","id":"call-1","result":{"id":99,"text":"` + big + `"}}`, true, `"call-1"`},
		{"spaces", `{ "id" : 12 , "result" : [ "` + big + `" ] }`, true, "12"},
		{"a nested id is not the id", `{"result":{"id":5,"t":"` + big + `"},"jsonrpc":"2.0"}`, false, ""},
		{"a request from the server", `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"t":"` + big + `"}}`, false, "3"},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`, false, ""},
		{"a key that holds id", `{"idx":1,"result":"` + big + `","id":8}`, true, "8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s frameScanner
			// Fed in uneven pieces, as the reader's chunks come.
			for i := 0; i < len(tc.frame); i += 333 {
				s.feed([]byte(tc.frame[i:min(i+333, len(tc.frame))]))
			}
			if s.response() != tc.response || string(s.id) != tc.id {
				t.Errorf("response %v id %q; want %v %q", s.response(), s.id, tc.response, tc.id)
			}
			if s.n != int64(len(tc.frame)) {
				t.Errorf("counted %d bytes of %d", s.n, len(tc.frame))
			}
			m := s.answer(100)
			if !tc.response {
				if m != nil {
					t.Errorf("answered a frame that is no response: %v", m)
				}
				return
			}
			r, ok := m.(*jsonrpc.Response)
			if !ok || r.Error == nil {
				t.Fatalf("answer: %#v", m)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	long := `{"jsonrpc":"2.0","result":"` + strings.Repeat("z", 200_000) + `","id":1}`
	input := "short line\n" + long + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + "no newline at the end"
	br := bufio.NewReaderSize(strings.NewReader(input), 4096)
	line, sc, err := readFrame(br, 1000)
	if err != nil || sc != nil || string(line) != "short line\n" {
		t.Fatalf("first: %q %v %v", line, sc, err)
	}
	line, sc, err = readFrame(br, 1000)
	if err != nil || sc == nil || line != nil || !sc.response() || string(sc.id) != "1" {
		t.Fatalf("second (too large): %q %+v %v", line, sc, err)
	}
	line, sc, err = readFrame(br, 1000)
	if err != nil || sc != nil || !strings.HasPrefix(string(line), `{"jsonrpc":"2.0","id":2`) {
		t.Fatalf("third: %q %v %v", line, sc, err)
	}
	line, _, err = readFrame(br, 1000)
	if err != nil || string(line) != "no newline at the end" {
		t.Fatalf("last: %q %v", line, err)
	}
	if _, _, err = readFrame(br, 1000); err == nil {
		t.Fatal("no error at the end of the stream")
	}
}

func FuzzFrameScanner(f *testing.F) {
	f.Add([]byte(`{"result":"x","id":1}`))
	f.Add([]byte(`{"id":"a\"b","method":"m"}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s frameScanner
		s.feed(b)
		_ = s.answer(10) // never panics, whatever the bytes
		if len(s.id) > maxIDBytes {
			t.Fatalf("captured %d id bytes", len(s.id))
		}
	})
}
