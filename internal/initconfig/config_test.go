package initconfig

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigJSON(t *testing.T) {
	swap := 10
	in := Config{
		Storage:     Storage{Path: "/storage", ReadyFile: "/storage/.ready", Timeout: Duration(90 * time.Second), Required: true},
		Swappiness:  &swap,
		GracePeriod: Duration(20 * time.Second),
		Caches:      Caches{HF: "/storage/hf", GCMaxAge: Duration(36 * time.Hour)},
		Image:       ImageFacts{Name: "pytorch", CUDA: "12.4"},
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	const want = `{"storage":{"path":"/storage","ready_file":"/storage/.ready","timeout":"1m30s","required":true},"swappiness":10,"caches":{"hf":"/storage/hf","gc_max_age":"36h0m0s"},"grace_period":"20s","image":{"name":"pytorch","cuda":"12.4"}}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var out Config
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
}

func TestDurationUnmarshalErrors(t *testing.T) {
	for _, in := range []string{`90`, `"soon"`, `"-5s"`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, nil error; want one", in, d.Std())
		}
	}
}
