package rest

import (
	"errors"
	"sort"

	"github.com/grantwire/grantwire"
)

func sortStrings(s []string) { sort.Strings(s) }

func asError(err error, target **grantwire.Error) bool { return errors.As(err, target) }
