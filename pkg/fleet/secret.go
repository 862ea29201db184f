package fleet

import (
	"bytes"
	"fmt"
	"os"
)

// readSecret reads a credential from a file that only its owner may read
// (mode 0600 or stricter), so a password never sits on a command line or in
// the environment that skills could inherit. One trailing newline is
// dropped. The error names the file, never its contents.
//
// A shared reader for secret files is planned in internal/fileio; this
// minimal one stands in until it lands on main.
func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("secret file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("secret file %s has mode %04o: others may read it; chmod 600 it", path, perm)
	}
	b := make([]byte, 0, 256)
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(f); err != nil {
		return "", fmt.Errorf("secret file %s: %w", path, err)
	}
	s := bytes.TrimSuffix(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\r"))
	if len(s) == 0 {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	return string(s), nil
}
