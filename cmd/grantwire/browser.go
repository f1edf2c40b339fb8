package main

import (
	"os/exec"
	"runtime"
	"strings"
)

// systemBrowser returns a function that opens a URL in the user's browser, or nil when
// this session has none (no $BROWSER, and on Linux no display or no xdg-open), in which
// case the OS shell prints the URL and waits (or reports INTERACTIVE_AUTH_REQUIRED when
// nobody can complete it). The URL is passed as an argument, never through a shell.
func systemBrowser(getenv func(string) string) func(string) error {
	if b := strings.TrimSpace(getenv("BROWSER")); b != "" {
		first, _, _ := strings.Cut(b, ":")
		fields := strings.Fields(first)
		if len(fields) > 0 {
			return func(u string) error {
				args := append([]string(nil), fields[1:]...)
				replaced := false
				for i, f := range args {
					if strings.Contains(f, "%s") {
						args[i], replaced = strings.ReplaceAll(f, "%s", u), true
					}
				}
				if !replaced {
					args = append(args, u)
				}
				return start(fields[0], args...)
			}
		}
	}
	switch runtime.GOOS {
	case "darwin":
		return func(u string) error { return start("open", u) }
	case "windows":
		return func(u string) error { return start("rundll32", "url.dll,FileProtocolHandler", u) }
	default:
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
			return nil
		}
		if _, err := exec.LookPath("xdg-open"); err != nil {
			return nil
		}
		return func(u string) error { return start("xdg-open", u) }
	}
}

// start runs a command without waiting for it (and reaps it when it exits).
func start(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
