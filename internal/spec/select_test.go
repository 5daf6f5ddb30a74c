package spec

import (
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	imgs := []Image{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		names   []string
		want    string
		wantErr string
	}{
		{nil, "a,b,c", ""},
		{[]string{"c", "a"}, "c,a", ""},
		{[]string{"b", "x"}, "", `no image named "x" in the specs (images: [a b c])`},
	} {
		got, err := Select(imgs, tc.names)
		var names []string
		for _, img := range got {
			names = append(names, img.Name)
		}
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Select(%v) error = %v, want %q", tc.names, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(names, ",") != tc.want {
			t.Errorf("Select(%v) = %v, %v; want %s", tc.names, names, err, tc.want)
		}
	}
}
