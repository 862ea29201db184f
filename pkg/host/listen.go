package host

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/skillhost/skillhost/pkg/api"
)

// listen opens the API listener and refuses, unless a token guards the API,
// any address that is not loopback.
func listen(addr string, haveToken bool) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if fi, err := os.Lstat(path); err == nil {
			if fi.Mode()&os.ModeSocket == 0 {
				return nil, fmt.Errorf("listen %s: %s exists and is not a socket; refusing to replace it", addr, path)
			}
			// Only a socket nobody answers on is an earlier run's leftover;
			// removing a live one would cut its daemon off from its clients.
			c, err := net.DialTimeout("unix", path, time.Second)
			if err == nil {
				c.Close()
				return nil, fmt.Errorf("listen %s: another process serves on %s; stop it or choose another path", addr, path)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("listen %s: cannot tell whether %s is in use: %w", addr, path, err)
			}
			os.Remove(path)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, err
		}
		// Connecting takes write permission: the owner's alone.
		if err := os.Chmod(path, 0o600); err != nil {
			l.Close()
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return l, nil
	}
	if !api.IsLoopback(addr) && !haveToken {
		return nil, fmt.Errorf("refusing to listen on %s without a token: the address is not loopback; pass --token-file (or --invoke-token-file) or listen on 127.0.0.1", addr)
	}
	return net.Listen("tcp", addr)
}
