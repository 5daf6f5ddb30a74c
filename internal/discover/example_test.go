package discover_test

import (
	"fmt"
	"time"

	"imagectl/internal/discover"
)

func ExampleNewSupport() {
	s, err := discover.NewSupport("2026-11", 12)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.End, s.State(time.Date(2027, 10, 15, 0, 0, 0, 0, time.UTC)))
	// Output: 2027-10-31 ending
}

func ExampleParseReleaseTag() {
	image, month, n, ok := discover.ParseReleaseTag("pytorch-2.6-cu121-py3.11-2026.12.1")
	fmt.Println(image, month, n, ok)
	// Output: pytorch-2.6-cu121-py3.11 2026-12 1 true
}
