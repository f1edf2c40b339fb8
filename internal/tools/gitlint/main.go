// Command gitlint keeps the repository's tracked files clean (`make lint` runs it): no
// executable binary is tracked (ELF, Mach-O, PE, found by their magic bytes, whatever the
// file is called), no tracked file is over 2 MB unless .gitattributes marks it
// `linguist-generated`, and every Go file that says it is generated ("// Code generated …
// DO NOT EDIT.") is marked so too. Each refusal names the file and the command that fixes it.
//
// Usage: go run ./internal/tools/gitlint [-C dir] [-max-bytes N]
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// MaxBytes is the largest tracked file not marked generated.
const MaxBytes = 2 << 20

func main() {
	dir := flag.String("C", ".", "the repository's work tree")
	max := flag.Int64("max-bytes", MaxBytes, "the largest tracked file not marked linguist-generated")
	flag.Parse()
	problems, n, err := Lint(*dir, *max)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitlint:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "gitlint:", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "gitlint: %d of %d tracked files refused (see above)\n", len(problems), n)
		os.Exit(1)
	}
	fmt.Printf("gitlint: %d tracked files: no executable binary, none over %s unless generated, generated files marked\n", n, size(*max))
}

// Problem is one refused file and the command that fixes it.
type Problem struct {
	Path string
	Why  string
	Fix  string
}

func (p Problem) String() string { return p.Path + ": " + p.Why + "; fix: " + p.Fix }

// Lint checks every file git tracks in dir and returns the refused ones and how many it
// checked.
func Lint(dir string, max int64) ([]Problem, int, error) {
	out, err := git(dir, nil, "ls-files", "-z", "--cached")
	if err != nil {
		return nil, 0, err
	}
	var paths []string
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	generated, err := generatedSet(dir, paths)
	if err != nil {
		return nil, 0, err
	}
	var problems []Problem
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		fi, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree: nothing to read (git status shows it)
		}
		if err != nil {
			return nil, 0, err
		}
		if !fi.Mode().IsRegular() {
			continue // symlinks and submodules hold no bytes of their own
		}
		head, err := readHead(full, 4096)
		if err != nil {
			return nil, 0, err
		}
		if kind := executableKind(head); kind != "" {
			problems = append(problems, Problem{p, "a tracked " + kind + " (build output does not belong in git)",
				fmt.Sprintf("git rm --cached -- %s && echo %s >> .gitignore", shellQuote(p), shellQuote("/"+p))})
			continue
		}
		if fi.Size() > max && !generated[p] {
			problems = append(problems, Problem{p, fmt.Sprintf("%s, over the %s limit, and not marked generated", size(fi.Size()), size(max)),
				fmt.Sprintf("echo '%s linguist-generated' >> .gitattributes (when a make target writes it), else git rm --cached -- %s", attrPattern(p), shellQuote(p))})
			continue
		}
		if strings.HasSuffix(p, ".go") && !generated[p] && saysGenerated(head) {
			problems = append(problems, Problem{p, "says it is generated (Code generated … DO NOT EDIT.) but .gitattributes does not mark it",
				fmt.Sprintf("echo '%s linguist-generated' >> .gitattributes", attrPattern(p))})
		}
	}
	return problems, len(paths), nil
}

// generatedSet asks git which paths .gitattributes marks linguist-generated (set or true).
func generatedSet(dir string, paths []string) (map[string]bool, error) {
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out, err := git(dir, &in, "check-attr", "-z", "--stdin", "linguist-generated")
	if err != nil {
		return nil, err
	}
	// -z output: path NUL attribute NUL value NUL, repeated.
	f := strings.Split(string(out), "\x00")
	set := map[string]bool{}
	for i := 0; i+2 < len(f); i += 3 {
		if v := f[i+2]; v == "set" || v == "true" {
			set[f[i]] = true
		}
	}
	return set, nil
}

func git(dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	k, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:k], nil
}

// executableKind names the executable format whose magic bytes head starts with, or "".
func executableKind(head []byte) string {
	if len(head) < 4 {
		return ""
	}
	switch m := binary.BigEndian.Uint32(head); m {
	case 0x7f454c46: // \x7fELF
		return "ELF executable or object"
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe: // 32/64-bit, either byte order
		return "Mach-O executable or object"
	case 0xcafebabe:
		// A universal (fat) Mach-O binary, or a Java class file: the count of architectures
		// that follows is small, a class file's version (major ≥ 45) is not.
		if len(head) >= 8 && binary.BigEndian.Uint32(head[4:]) < 45 {
			return "Mach-O universal binary"
		}
	}
	// PE: the DOS header's "MZ", and at its e_lfanew (offset 0x3c) the "PE\0\0" signature.
	if head[0] == 'M' && head[1] == 'Z' && len(head) >= 0x40 {
		off := int(binary.LittleEndian.Uint32(head[0x3c:]))
		if off >= 0x40 && off+4 <= len(head) && string(head[off:off+4]) == "PE\x00\x00" {
			return "PE (Windows) executable or DLL"
		}
	}
	return ""
}

// generatedLine is the Go convention (go help generate) for generated files.
var generatedLine = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func saysGenerated(head []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(head))
	for sc.Scan() {
		line := sc.Text()
		if generatedLine.MatchString(line) {
			return true
		}
		if strings.HasPrefix(line, "package ") {
			return false // the convention puts the line before the package clause
		}
	}
	return false
}

// attrPattern anchors a path for .gitattributes ("/a/b"), escaping what patterns treat specially.
func attrPattern(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, ` `, `?`, `'`, `?`)
	return "/" + r.Replace(p)
}

func shellQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	if n >= 1<<10 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
