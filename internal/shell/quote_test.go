package shell

import (
	"os/exec"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "a b", "it's", `$HOME "x" \n`, "''", "a\nb"} {
		out, err := exec.Command("sh", "-c", "printf %s "+Quote(s)).Output()
		if err != nil {
			t.Fatalf("sh -c printf %s: %v", Quote(s), err)
		}
		if string(out) != s {
			t.Errorf("sh read Quote(%q) = %q as %q", s, Quote(s), out)
		}
	}
}
