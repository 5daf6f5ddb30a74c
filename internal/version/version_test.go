package version

import (
	"slices"
	"testing"
)

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		want       int
	}{
		{"driver patch with a leading zero", "580.159.04", "580.159.4", 0},
		{"driver minor numerically", "525.60.13", "525.105.17", -1},
		{"driver major", "580.65.06", "575.57.08", 1},
		{"cuda 12.4 below 12.10", "12.4", "12.10", -1},
		{"cuda 12.10 above 12.9", "12.10", "12.9", 1},
		{"missing component is zero", "12.4", "12.4.0", 0},
		{"longer is newer", "12.4.1", "12.4", 1},
		{"python", "3.11", "3.9", 1},
		{"pip release", "24.0", "23.3.2", 1},
		{"single component", "3", "3.0.0", 0},
		{"driver numeric, not lexical", "1000.0.0", "999.99.99", 1},
		{"driver old branch", "470.239.06", "525.60.13", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compare(tc.a, tc.b)
			if err != nil || got != tc.want {
				t.Errorf("Compare(%q, %q) = %d, %v, want %d", tc.a, tc.b, got, err, tc.want)
			}
			if got, _ := Compare(tc.b, tc.a); got != -tc.want {
				t.Errorf("Compare(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		"", ".", "12.", ".4", "12..4", "12.x", "v12.4", " 12.4", "12.4 ", "+1.2", "-1.2", "1.-2",
		"2.0.0rc1", "2.11.0+cu130", "1.0.dev0", "1.0.post1", "99999999999999999999.1",
	} {
		if v, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", s, v)
		}
		if _, err := Compare(s, "1.0"); err == nil {
			t.Errorf("Compare(%q, 1.0): want an error, not a silent 0", s)
		}
		if Before(s, "99.0") {
			t.Errorf("Before(%q, 99.0) = true, want false for a version that does not parse", s)
		}
	}
}

func TestParse(t *testing.T) {
	v, err := Parse("580.159.04")
	if err != nil || !slices.Equal(v, Numeric{580, 159, 4}) || v.String() != "580.159.4" {
		t.Errorf("Parse(580.159.04) = %v (%s), %v, want [580 159 4]", v, v, err)
	}
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want bool
	}{
		{"12.4", 2, true}, {"12.4", 3, false}, {"2.6.0", 3, true}, {"12", 0, false},
		{"525.60.13", 0, true}, {"12.4", 0, true}, {"12.x", 2, false}, {"", 0, false},
	} {
		if got := Valid(tc.s, tc.n); got != tc.want {
			t.Errorf("Valid(%q, %d) = %v, want %v", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestHasPrefix(t *testing.T) {
	for _, tc := range []struct {
		v, p string
		want bool
	}{
		{"3.11.2", "3.11", true}, {"3.11", "3.11", true}, {"3.11", "3.1", false},
		{"3.1", "3.11", false}, {"2.21.5", "2.21.5", true}, {"9.1.0", "9.1.0.70", false},
		{"3.13.0rc1", "3.13", true}, {"3.13.0rc1", "3.13.0", false}, {"580.159.04", "580.159.4", true}, {"", "3", false},
	} {
		if got := HasPrefix(tc.v, tc.p); got != tc.want {
			t.Errorf("HasPrefix(%q, %q) = %v, want %v", tc.v, tc.p, got, tc.want)
		}
	}
}

func TestAtLeastAndBefore(t *testing.T) {
	if ok, err := AtLeast("580.159.04", "580.65.06"); err != nil || !ok {
		t.Errorf("AtLeast(580.159.04, 580.65.06) = %v, %v, want true", ok, err)
	}
	if ok, err := AtLeast("525.60.13", "525.105.17"); err != nil || ok {
		t.Errorf("AtLeast(525.60.13, 525.105.17) = %v, %v, want false", ok, err)
	}
	if _, err := AtLeast("", "525.60.13"); err == nil {
		t.Errorf("AtLeast(\"\", 525.60.13): want an error")
	}
	if !Before("23.3.2", "24.1") || Before("24.1", "24.1") || Before("24.1rc1", "25.0") {
		t.Errorf("Before: want 23.3.2 < 24.1, not 24.1 < 24.1, and a pre-release never before")
	}
}

func TestSplitLocal(t *testing.T) {
	for _, tc := range []struct{ v, pub, local string }{
		{"2.11.0+cu130", "2.11.0", "cu130"}, {"2.6.0", "2.6.0", ""}, {"2.6.0+cpu", "2.6.0", "cpu"},
		{"1.0+a+b", "1.0", "a+b"},
	} {
		if pub, local := SplitLocal(tc.v); pub != tc.pub || local != tc.local {
			t.Errorf("SplitLocal(%q) = %q, %q, want %q, %q", tc.v, pub, local, tc.pub, tc.local)
		}
	}
	if Major("12.4") != "12" || Major("13") != "13" {
		t.Errorf("Major: want 12 of 12.4 and 13 of 13")
	}
}
