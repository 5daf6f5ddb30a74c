package cmd

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
	"imagectl/internal/sign"
	"imagectl/internal/spec"
)

// TestDocsExamples runs the offline shell examples of README.md and
// docs/*.md, so that the docs stay true as flags and messages move.
//
// The selection rule (write examples to it, and they are checked):
//   - files: README.md and every docs/*.md (not the folders under docs/);
//   - inside a fenced block whose info string is empty, sh, bash, shell or
//     console, each line (joined over trailing "\" continuations, a leading
//     "$ " dropped) whose first word is imagectl;
//   - whose verb runs offline: lint, print, compat, version, help,
//     completion, "policy render", "monitoring render", or any command
//     with --help;
//   - and which holds no placeholder: no "...", no <...>, no all-capitals
//     word such as NAME or REPO, no pipe, $( or backquote, no VAR=value
//     prefix.
//
// A trailing "# comment" is dropped, and a "> FILE" redirection writes to a
// temporary folder. An example must exit 0, unless its comment says
// "fails: exit N". Examples run in a folder holding the checkout's files,
// with keys/cosign.pub and keys/verifier.pub generated there (what a user
// gets from the platform: docs/users.md).
func TestDocsExamples(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var exs []docExample
	for _, f := range files {
		exs = append(exs, docExamples(t, f)...)
	}
	if len(exs) < 8 {
		t.Fatalf("only %d offline examples selected from README.md and docs/*.md, want at least 8", len(exs))
	}
	work := exampleWorkdir(t, root)
	t.Chdir(work)
	for _, ex := range exs {
		rel, _ := filepath.Rel(root, ex.file)
		t.Run(rel+":"+strconv.Itoa(ex.line), func(t *testing.T) {
			root := New()
			root.SetOut(io.Discard)
			var errb strings.Builder
			root.SetErr(&errb)
			root.SetIn(strings.NewReader(""))
			root.SetArgs(ex.args)
			err := root.ExecuteContext(t.Context())
			if code := exitcode.Code(err); code != ex.code {
				t.Errorf("%s:%d: %s\nexit %d, want %d: %v\n%s", rel, ex.line, ex.text, code, ex.code, err, errb.String())
			}
		})
	}
}

type docExample struct {
	file string
	line int
	text string
	args []string
	code int
}

var (
	offlineVerbs = map[string]bool{"lint": true, "print": true, "compat": true, "version": true, "help": true, "completion": true}
	placeholder  = regexp.MustCompile(`\.\.\.|<[^>]*>|\b[A-Z][A-Z0-9_]{2,}\b|\||\$\(|` + "`")
	failsExit    = regexp.MustCompile(`fails: exit (\d+)`)
	baseAttr     = regexp.MustCompile(`(?m)^\s*base\s*=`)
)

// docExamples returns the selected examples of one Markdown file.
func docExamples(t *testing.T, path string) []docExample {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docExample
	sc := bufio.NewScanner(f)
	inShell, inFence := false, false
	n, start := 0, 0
	var cur string
	for sc.Scan() {
		n++
		line := sc.Text()
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			inFence = !inFence
			switch strings.TrimSpace(fence) {
			case "", "sh", "bash", "shell", "console":
				inShell = inFence
			default:
				inShell = false
			}
			continue
		}
		if !inShell {
			continue
		}
		if cur == "" {
			start = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " "), "\\"); ok {
			cur += s + " "
			continue
		}
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cur+line), "$ "))
		cur = ""
		if ex, ok := selectExample(text); ok {
			ex.file, ex.line = path, start
			out = append(out, ex)
		}
	}
	return out
}

// selectExample applies the rule of TestDocsExamples to one command line.
func selectExample(text string) (docExample, bool) {
	cmdText, comment, _ := strings.Cut(text, " #")
	words := strings.Fields(cmdText)
	if len(words) == 0 || words[0] != "imagectl" || placeholder.MatchString(cmdText) || strings.Contains(cmdText, "=") && strings.Index(cmdText, "=") < strings.Index(cmdText, "imagectl") {
		return docExample{}, false
	}
	args, ok := splitArgs(strings.Join(words[1:], " "))
	if !ok {
		return docExample{}, false
	}
	// "> FILE" writes to a temporary folder.
	for i := 0; i < len(args); i++ {
		if args[i] == ">" && i+1 < len(args) {
			args = append(args[:i], args[i+2:]...)
			i--
		}
	}
	var verbs []string
	help := false
	for _, a := range args {
		if a == "--help" || a == "-h" {
			help = true
		}
		if !strings.HasPrefix(a, "-") && len(verbs) < 2 {
			verbs = append(verbs, a)
		}
	}
	run := help
	if len(verbs) > 0 && offlineVerbs[verbs[0]] {
		run = true
	}
	if len(verbs) > 1 && (verbs[0] == "policy" || verbs[0] == "monitoring") && verbs[1] == "render" {
		run = true
	}
	if !run {
		return docExample{}, false
	}
	ex := docExample{text: text, args: args}
	if m := failsExit.FindStringSubmatch(comment); m != nil {
		ex.code, _ = strconv.Atoi(m[1])
	}
	return ex, true
}

// splitArgs splits a command line as a shell would for simple quoting
// ('...' and "..."); false for anything else (variables, globs in quotes
// are kept as written).
func splitArgs(s string) ([]string, bool) {
	var args []string
	var cur strings.Builder
	in := rune(0)
	have := false
	for _, r := range s {
		switch {
		case in != 0 && r == in:
			in = 0
		case in != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			in, have = r, true
		case r == ' ' || r == '\t':
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		case r == '$' || r == ';' || r == '&':
			return nil, false
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if in != 0 {
		return nil, false
	}
	if have {
		args = append(args, cur.String())
	}
	return args, true
}

// exampleWorkdir is a folder with the checkout's top-level entries (as
// links) and a generated keys/cosign.pub and keys/verifier.pub.
func exampleWorkdir(t *testing.T, root string) string {
	t.Helper()
	work := t.TempDir()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "keys" || e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	keys := filepath.Join(work, "keys")
	for _, k := range []string{"cosign", "verifier"} {
		dir := filepath.Join(keys, k)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_, pub, err := sign.GenerateKeyPair(dir, []byte("docs-example"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pub, filepath.Join(keys, k+".pub")); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// TestDocsSpecExamples lints the spec examples of README.md and docs/*.md:
// every ```hcl block that declares an image with a base (a whole spec, not
// a fragment showing one block) must lint clean.
func TestDocsSpecExamples(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	exs := docSpecExamples(t, root)
	if len(exs) == 0 {
		t.Fatalf("no whole spec example found in README.md and docs/*.md")
	}
	for _, ex := range exs {
		if ex.err != nil {
			t.Errorf("%s: the spec example does not lint: %v", ex.name, ex.err)
		}
	}
}

type docSpec struct {
	name string // FILE:LINE of the block
	imgs []spec.Image
	err  error
}

// docSpecExamples loads each whole spec example (see TestDocsSpecExamples).
func docSpecExamples(t *testing.T, root string) []docSpec {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []docSpec
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != "```hcl" {
				continue
			}
			start := i + 1
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			}
			src := strings.Join(lines[start:i], "\n")
			if !strings.Contains(src, `image "`) || !baseAttr.MatchString(src) {
				continue
			}
			// Lines count from the block's first line; the name gives
			// the file and the fence's line.
			name := rel + ":" + strconv.Itoa(start)
			imgs, err := spec.LoadSource(t.Context(), name, []byte(src), spec.WithEnv(func(string) (string, bool) { return "", false }))
			out = append(out, docSpec{name: name, imgs: imgs, err: err})
		}
	}
	return out
}

// TestDocsImageNames: an image name that docs/*.md, README.md or the help
// of pin, promote and releases hand to those commands is one the shipped
// specs, or a whole spec example of the docs, make (pin NAME:TAG reads
// images/NAME/releases.json), and a tag
// after NAME: is one a release gives it: NAME itself or NAME-YYYY.MM[.N].
func TestDocsImageNames(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := spec.Load(t.Context(), []string{filepath.Join(root, "specs")}, spec.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, img := range imgs {
		names[img.Name] = true
	}
	for _, ex := range docSpecExamples(t, root) {
		for _, img := range ex.imgs {
			names[img.Name] = true
		}
	}
	texts := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range append(files, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		texts[rel] = string(b)
	}
	for _, c := range New().Commands() {
		texts["imagectl "+c.Name()+" --help"] = c.Example
	}
	use := regexp.MustCompile(`imagectl (pin|promote|releases) ([a-z0-9][a-z0-9._-]*)(?::([A-Za-z0-9._-]+))?(?:\s|$|` + "`" + `)`)
	monthly := regexp.MustCompile(`^-\d{4}\.\d{2}(\.\d+)?$`)
	n := 0
	for where, text := range texts {
		for _, m := range use.FindAllStringSubmatch(text, -1) {
			n++
			img, tag := m[2], m[3]
			if img == "images" {
				continue // the images folder
			}
			if !names[img] {
				t.Errorf("%s: %q names image %q, which no shipped spec makes", where, strings.TrimSpace(m[0]), img)
				continue
			}
			if rest, ok := strings.CutPrefix(tag, img); tag != "" && (!ok || rest != "" && !monthly.MatchString(rest)) {
				t.Errorf("%s: %q names tag %q, which a release of %s never gets (%s or %s-YYYY.MM)", where, strings.TrimSpace(m[0]), tag, img, img, img)
			}
		}
	}
	// A pattern that matches nothing checks nothing: the docs and the help
	// name images in ten pin, promote and releases lines today.
	if n < 5 {
		t.Errorf("%d \"imagectl pin|promote|releases NAME\" uses found in the docs and --help, want at least 5 (did the pattern stop matching?)", n)
	}
}

// TestReadmeNamesEveryCommand: every command a user can run appears in
// README.md as "imagectl VERB".
func TestReadmeNamesEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range New().Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		if !strings.Contains(string(b), "imagectl "+c.Name()+" ") && !strings.Contains(string(b), "imagectl "+c.Name()+"`") {
			t.Errorf("README.md does not mention imagectl %s (%s)", c.Name(), c.Short)
		}
	}
}
