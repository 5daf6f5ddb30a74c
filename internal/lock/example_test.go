package lock_test

import (
	"os"

	"imagectl/internal/lock"
)

func ExampleDiff() {
	old := &lock.Lock{Pip: []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.0.0"}}}
	new := &lock.Lock{Pip: []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.1.0"}}}
	lock.Diff(old, new).WriteText(os.Stdout)
	// Output:
	// ~ pip  demo-util 1.0.0 -> 1.1.0
	// 1 changed, 0 added, 0 removed
}
