package testenv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Page is one page of a static site as headless Chromium rendered it.
type Page struct {
	URL string
	// DOM is the rendered document (chromium --dump-dom).
	DOM string
	// Console are the console messages Chromium logged while loading it
	// (a failed resource load is one).
	Console []string
}

// Site serves a static site's folder on loopback for Chromium; Missing
// records every request that found nothing.
type Site struct {
	URL string
	mu  sync.Mutex
	// missing are the paths requested that do not exist.
	missing []string
}

// Missing are the paths requested that answered 404.
func (s *Site) Missing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.missing...)
}

// ServeSite serves dir on 127.0.0.1 for the test's lifetime.
func ServeSite(t testing.TB, dir string) *Site {
	t.Helper()
	s := &Site{}
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(dir + path.Clean("/"+r.URL.Path)); err != nil {
			s.mu.Lock()
			s.missing = append(s.missing, r.URL.Path)
			s.mu.Unlock()
		}
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// ChromiumPath is Debian's chromium (hack/deps.sh installs it), or "" when
// it is not installed.
func ChromiumPath() string {
	for _, p := range []string{os.Getenv("IMAGECTL_CHROMIUM"), "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if lp, err := exec.LookPath(p); err == nil {
			return lp
		}
	}
	return ""
}

// NeedChromium returns Chromium's path, skipping the test without it
// (failing it under IMAGECTL_E2E=1: CI installs it).
func NeedChromium(t testing.TB) string {
	t.Helper()
	p := ChromiumPath()
	if p == "" {
		if os.Getenv("IMAGECTL_E2E") == "1" {
			t.Fatal("chromium is not installed: hack/deps.sh installs it")
		}
		t.Skip("chromium is not installed (hack/deps.sh)")
	}
	return p
}

// Render loads pageURL in headless Chromium and returns its DOM and the
// console messages; with screenshot set it also writes a PNG of the
// page there (width x 1600).
func Render(t testing.TB, pageURL, screenshot string, width int) Page {
	t.Helper()
	bin := NeedChromium(t)
	profile := t.TempDir()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000", "--run-all-compositor-stages-before-draw"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(extra ...string) (string, string) {
		cmd := exec.CommandContext(ctx, bin, append(append(append([]string(nil), args...), extra...), pageURL)...)
		cmd.Env = append(os.Environ(), "HOME="+profile)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %s: %v\n%s", pageURL, err, errb.String())
		}
		return out.String(), errb.String()
	}
	dom, logs := run("--dump-dom")
	p := Page{URL: pageURL, DOM: dom}
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Uncaught") {
			p.Console = append(p.Console, l)
		}
	}
	if screenshot != "" {
		if width == 0 {
			width = 1280
		}
		run("--screenshot="+screenshot, "--window-size="+itoa(width)+",1600", "--hide-scrollbars")
		if st, err := os.Stat(screenshot); err != nil || st.Size() == 0 {
			t.Fatalf("chromium wrote no screenshot %s: %v", screenshot, err)
		}
	}
	return p
}

func itoa(n int) string {
	s := ""
	for n > 0 || s == "" {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

var hrefRE = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
var idRE = regexp.MustCompile(`\sid="([^"]*)"`)

// Links are the href and src targets of a rendered page, resolved
// against its URL.
func (p Page) Links() []*url.URL {
	base, err := url.Parse(p.URL)
	if err != nil {
		return nil
	}
	var out []*url.URL
	for _, m := range hrefRE.FindAllStringSubmatch(p.DOM, -1) {
		u, err := base.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err == nil {
			out = append(out, u)
		}
	}
	return out
}

// IDs are the element ids of a rendered page.
func (p Page) IDs() map[string]bool {
	ids := map[string]bool{}
	for _, m := range idRE.FindAllStringSubmatch(p.DOM, -1) {
		ids[m[1]] = true
	}
	return ids
}

// CheckSite renders every HTML page reachable from site's index.html in
// Chromium and fails the test on a console message, a link or resource
// that does not resolve (a missing file, or a #fragment with no such id
// on its page), or a page without an <h1> or <html lang>. It returns the
// pages by path.
func CheckSite(t testing.TB, site *Site) map[string]Page {
	t.Helper()
	pages := map[string]Page{}
	queue := []string{site.URL + "/index.html"}
	var fragments []*url.URL
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		pu, _ := url.Parse(u)
		if _, ok := pages[pu.Path]; ok {
			continue
		}
		p := Render(t, u, "", 0)
		pages[pu.Path] = p
		for _, c := range p.Console {
			t.Errorf("%s: console: %s", pu.Path, c)
		}
		if !strings.Contains(p.DOM, "<h1") || !strings.Contains(p.DOM, `<html lang="en"`) {
			t.Errorf("%s: no <h1> or <html lang>", pu.Path)
		}
		for _, l := range p.Links() {
			if l.Scheme == "data" {
				continue
			}
			if l.Host != pu.Host {
				t.Errorf("%s links outside the site: %s", pu.Path, l)
				continue
			}
			if l.Fragment != "" {
				fragments = append(fragments, l)
			}
			resp, err := http.Get(site.URL + l.Path)
			if err != nil {
				t.Errorf("%s: link %s: %v", pu.Path, l, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: link %s: %s", pu.Path, l, resp.Status)
				continue
			}
			if strings.HasSuffix(l.Path, ".html") {
				queue = append(queue, site.URL+l.Path)
			}
		}
	}
	for _, f := range fragments {
		p, ok := pages[f.Path]
		if !ok {
			t.Errorf("link %s: page not rendered", f)
			continue
		}
		if !p.IDs()[f.Fragment] {
			t.Errorf("link %s: no element with id %q", f, f.Fragment)
		}
	}
	if m := site.Missing(); len(m) > 0 {
		t.Errorf("requests that found nothing: %v", m)
	}
	return pages
}
