package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches a Markdown link or image: [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)

// inlineCode matches a code span, whose text is no link.
var inlineCode = regexp.MustCompile("`[^`\n]*`")

// prose returns the lines of a Markdown file outside its fenced blocks,
// each with its 1-based number; code spans are blanked.
func prose(text string) map[int]string {
	lines := map[int]string{}
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines[i+1] = inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) })
		}
	}
	return lines
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// file: the heading's text in lower case, without its formatting and
// punctuation, spaces made hyphens, and -1, -2... after a repeat.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimLeft(l, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		slug := slugOf(h)
		a := slug
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", slug, n)
		}
		out[a] = true
	}
	return out
}

// mdLinkText matches a link in a heading, whose text stays.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// slugOf is GitHub's anchor of a heading's text.
func slugOf(heading string) string {
	h := mdLinkText.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlugOf(t *testing.T) {
	for in, want := range map[string]string{
		" Retries and dead letters":        "retries-and-dead-letters",
		" `max_attempts`":                  "max_attempts",
		" Request/reply":                   "requestreply",
		" RabbitMQ 3.x and 4.x":            "rabbitmq-3x-and-4x",
		" What the quick start's steps do": "what-the-quick-starts-steps-do",
		" How `make bench` measures":       "how-make-bench-measures",
		" See [the keeper](x.md) now":      "see-the-keeper-now",
	} {
		if got := slugOf(in); got != want {
			t.Errorf("slugOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := anchors("# A\n## A\n```\n# not a heading\n```\n#nospace\n"); !maps(got, "a", "a-1") {
		t.Errorf("anchors = %v, want a and a-1", got)
	}
}

func maps(m map[string]bool, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if !m[k] {
			return false
		}
	}
	return true
}

// Every relative link of the README and the guide leads to a file of
// this repository, and every #anchor to a heading of its page.
func TestDocsLinksResolve(t *testing.T) {
	texts := map[string]string{} // cleaned absolute path → content, for anchors
	read := func(path string) (string, error) {
		if s, ok := texts[path]; ok {
			return s, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		texts[path] = string(data)
		return string(data), nil
	}
	checked := 0
	for _, file := range docFiles(t) {
		abs, err := filepath.Abs(file)
		if err != nil {
			t.Fatal(err)
		}
		text, err := read(abs)
		if err != nil {
			t.Fatal(err)
		}
		lines := prose(text)
		for _, n := range slices.Sorted(mapKeys(lines)) {
			for _, m := range mdLink.FindAllStringSubmatch(lines[n], -1) {
				target := m[1]
				if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				at := fmt.Sprintf("%s:%d", docName(file), n)
				path, anchor, _ := strings.Cut(target, "#")
				dest := abs
				if path != "" {
					dest = filepath.Join(filepath.Dir(abs), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: the link %s leads nowhere: %v", at, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: the link %s has an anchor into a file that is not Markdown", at, target)
					continue
				}
				destText, err := read(dest)
				if err != nil {
					t.Errorf("%s: the link %s: %v", at, target, err)
					continue
				}
				if !anchors(destText)[anchor] {
					t.Errorf("%s: the link %s names no heading of %s", at, target, filepath.Base(dest))
				}
			}
		}
	}
	if checked < 200 {
		t.Fatalf("checked %d links; the extraction is broken", checked)
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The guide's index, docs/README.md, lists every page of docs/.
func TestDocsIndexListsEveryPage(t *testing.T) {
	index, err := os.ReadFile("../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(index), -1) {
		p, _, _ := strings.Cut(m[1], "#")
		listed[p] = true
	}
	for _, file := range docFiles(t)[1:] {
		if name := filepath.Base(file); name != "README.md" && !listed[name] {
			t.Errorf("docs/README.md does not list docs/%s", name)
		}
	}
}

// From the README, one click leads to each of the tasks a newcomer looks
// for first: publishing without consuming, replaying dead letters, testing
// a handler, tuning prefetch.
func TestReadmeLeadsToTheFirstTasksInOneClick(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for task, target := range map[string]string{
		"publish without consuming": "docs/getting-started.md#a-producer-service",
		"replay dead letters":       "docs/dead-letters.md#replaying-after-the-fix",
		"test a handler":            "docs/testing.md",
		"tune prefetch":             "docs/annotations.md#tuning-prefetch-and-concurrency",
	} {
		if !strings.Contains(string(readme), "("+target+")") {
			t.Errorf("the README does not link %s, where a reader learns to %s", target, task)
		}
	}
}
