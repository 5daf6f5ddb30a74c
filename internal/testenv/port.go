package testenv

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port nobody listens on now, for a test
// server or a published container port.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
