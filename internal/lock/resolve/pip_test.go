package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"imagectl/internal/lock"
)

func TestParseReport(t *testing.T) {
	sha := strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name    string
		in      string
		want    []lock.Wheel
		wantErr string
	}{{
		name: "pip 23 report, credentials and fragment stripped",
		in: `{"version":"1","pip_version":"23.0.1","install":[
{"download_info":{"url":"https://u:p@idx.example/files/Demo_Core-1.0.0-py3-none-any.whl#sha256=` + sha + `","archive_info":{"hash":"sha256=` + sha + `","hashes":{"sha256":"` + sha + `"}}},"requested":true,"metadata":{"name":"Demo_Core","version":"1.0.0"}}],
"environment":{"python_version":"3.11.2"}}`,
		want: []lock.Wheel{{Name: "demo-core", Version: "1.0.0", Filename: "Demo_Core-1.0.0-py3-none-any.whl", URL: "https://idx.example/files/Demo_Core-1.0.0-py3-none-any.whl", SHA256: sha}},
	}, {
		name: "pip 22 report: hash only",
		in: `{"version":"0","install":[
{"download_info":{"url":"https://idx.example/a-1-py3-none-any.whl","archive_info":{"hash":"sha256=` + sha + `"}},"metadata":{"name":"a","version":"1"}}]}`,
		want: []lock.Wheel{{Name: "a", Version: "1", Filename: "a-1-py3-none-any.whl", URL: "https://idx.example/a-1-py3-none-any.whl", SHA256: sha}},
	}, {
		name:    "no hash",
		in:      `{"version":"1","install":[{"download_info":{"url":"https://idx.example/a-1-py3-none-any.whl","archive_info":{}},"metadata":{"name":"a","version":"1"}}]}`,
		wantErr: "the index gives no sha256",
	}, {
		name:    "sdist",
		in:      `{"version":"1","install":[{"download_info":{"url":"https://idx.example/a-1.tar.gz","archive_info":{"hash":"sha256=` + sha + `"}},"metadata":{"name":"a","version":"1"}}]}`,
		wantErr: "is not a wheel",
	}, {
		name:    "future report format",
		in:      `{"version":"2","install":[]}`,
		wantErr: "format version",
	}, {
		name:    "not JSON",
		in:      `ERROR`,
		wantErr: "reading pip's report",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := parseReport([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseReport() = %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseReport() = %v", err)
			}
			if d := cmp.Diff(tc.want, res.Wheels); d != "" {
				t.Errorf("parseReport() mismatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestPins(t *testing.T) {
	req := []string{
		`nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"`,
		`nvidia_cudnn_cu12 (==9.1.0.70) ; platform_system == "Linux"`,
		`nvidia-cublas-cu12>=12`,
		`filelock`,
	}
	if got, want := pins(req, "nvidia-nccl-"), map[string]string{"nvidia-nccl-cu12": "2.21.5"}; !cmp.Equal(got, want) {
		t.Errorf("pins(nccl) = %v, want %v", got, want)
	}
	if got, want := pins(req, "nvidia-cudnn-"), map[string]string{"nvidia-cudnn-cu12": "9.1.0.70"}; !cmp.Equal(got, want) {
		t.Errorf("pins(cudnn) = %v, want %v", got, want)
	}
	if got := pins(req, "nvidia-cublas-"); len(got) != 0 {
		t.Errorf("pins(cublas) = %v, want none (>= is not a pin)", got)
	}
}

func TestHeldBack(t *testing.T) {
	log := `Looking in indexes: http://127.0.0.1:8000/simple/
Collecting demo-util
  Downloading http://127.0.0.1:8000/files/demo_util-1.2.0-py3-none-any.whl (1.1 kB)
  Downloading http://127.0.0.1:8000/files/demo_util-1.1.0-py3-none-any.whl (1.1 kB)
Collecting demo-core>=1.0
  Obtaining dependency information for demo-core>=1.0 from http://127.0.0.1:8000/files/demo_core-1.0.0-py3-none-any.whl.metadata
Collecting torch==2.6.0
  Downloading https://idx.example/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl (768.5 MB)
Would install demo-core-1.0.0 demo_util-1.1.0 torch-2.6.0+cu124
`
	wheels := []lock.Wheel{{Name: "demo-core", Version: "1.0.0"}, {Name: "demo-util", Version: "1.1.0"}, {Name: "torch", Version: "2.6.0+cu124"}}
	got := heldBack([]byte(log), wheels)
	want := []held{{Name: "demo-util", Locked: "1.1.0", Seen: "1.2.0"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("heldBack() mismatch (-want +got):\n%s", d)
	}
}
