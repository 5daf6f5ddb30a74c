package pep

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPageBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		page Page
		want string
	}{{
		name: "a plain server's listing",
		page: Page{Title: "Links for torch", Links: []Link{{Href: "../torch-2.11.0%2Bcu130-cp312-cp312-linux_x86_64.whl#sha256=ab", Text: "torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl"}}},
		want: "<!DOCTYPE html>\n<html>\n<body>\n<h1>Links for torch</h1>\n" +
			"<a href=\"../torch-2.11.0%2Bcu130-cp312-cp312-linux_x86_64.whl#sha256=ab\">torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl</a><br/>\n" +
			"</body>\n</html>\n",
	}, {
		name: "every attribute, escaped",
		page: Page{RepositoryVersion: "1.1", Title: "Links for a<b", Links: []Link{{
			Href: "f?a=1&b=2", Text: "x-1.whl", RequiresPython: ">=3.9,<4", Yanked: true, YankedReason: `"bad"`, CoreMetadata: "true",
		}}},
		want: "<!DOCTYPE html>\n<html>\n<head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Links for a&lt;b</title></head>\n<body>\n<h1>Links for a&lt;b</h1>\n" +
			"<a href=\"f?a=1&amp;b=2\" data-requires-python=\"&gt;=3.9,&lt;4\" data-yanked=\"&#34;bad&#34;\" data-core-metadata=\"true\" data-dist-info-metadata=\"true\">x-1.whl</a><br/>\n" +
			"</body>\n</html>\n",
	}, {
		name: "an empty root",
		page: Page{},
		want: "<!DOCTYPE html>\n<html>\n<body>\n</body>\n</html>\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, string(tc.page.Bytes())); d != "" {
				t.Errorf("Page.Bytes() (-want +got):\n%s", d)
			}
		})
	}
}
