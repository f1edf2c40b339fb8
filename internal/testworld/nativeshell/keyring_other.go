//go:build !((dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd)

package nativeshell

import (
	"errors"
	"runtime"
)

type item struct {
	user       string
	label      string
	attributes map[string]string
}

// listKeyring is not available here: go-keyring offers no listing of Keychain or
// Credential Manager items, so the final world's exact keyring check cannot run.
func listKeyring(string) ([]item, error) {
	return nil, errors.New("nativeshell: listing keyring items is implemented for the Secret Service only, not " + runtime.GOOS)
}
