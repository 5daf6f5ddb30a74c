package runtime

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SwappinessResult says what the swappiness step found and did.
type SwappinessResult struct {
	Before  int  `json:"before"`
	After   int  `json:"after"`
	Changed bool `json:"changed"`
	// Advice is set when the value could not be applied.
	Advice string `json:"advice,omitempty"`
}

// ReadSwappiness reads vm.swappiness; -1 when it cannot be read.
func ReadSwappiness(proc string) int {
	b, err := readFile(filepath.Join(proc, "sys/vm/swappiness"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// applySwappiness sets vm.swappiness to want. A read-only /proc/sys is not an
// error: the result carries one line of advice instead.
func applySwappiness(proc string, want int) (SwappinessResult, error) {
	path := filepath.Join(proc, "sys/vm/swappiness")
	r := SwappinessResult{Before: ReadSwappiness(proc)}
	r.After = r.Before
	if r.Before == want {
		return r, nil
	}
	err := writeExisting(path, []byte(strconv.Itoa(want)+"\n"))
	switch {
	case err == nil:
		r.After, r.Changed = want, true
		return r, nil
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		r.Advice = fmt.Sprintf("vm.swappiness is %d, the image asks for %d, but /proc/sys is read-only in this container; it is a host-wide setting, so set it on the node (sysctl -w vm.swappiness=%d, or the platform's node tuning) or drop swappiness from the image's runtime block", r.Before, want, want)
		return r, nil
	}
	return r, fmt.Errorf("setting vm.swappiness: %w", err)
}
