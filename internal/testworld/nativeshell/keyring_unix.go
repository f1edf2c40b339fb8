//go:build (dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd

package nativeshell

import (
	ss "github.com/zalando/go-keyring/secret_service"

	"github.com/grantwire/grantwire/internal/secretservice"
)

// item is a keyring item's non-secret view.
type item struct {
	user       string
	label      string
	attributes map[string]string
}

// listKeyring lists a service's items in the Secret Service's login collection, as
// go-keyring stores them (attributes "service" and "username"), reading only their labels
// and attributes.
func listKeyring(service string) ([]item, error) {
	svc, err := ss.NewSecretService()
	if err != nil {
		return nil, err
	}
	coll := svc.GetLoginCollection()
	if err := svc.Unlock(coll.Path()); err != nil {
		return nil, err
	}
	paths, err := svc.SearchItems(coll, map[string]string{"service": service})
	if err != nil {
		return nil, err
	}
	var out []item
	for _, p := range paths {
		obj := svc.Object("org.freedesktop.secrets", p)
		var it item
		if err := obj.StoreProperty("org.freedesktop.Secret.Item.Attributes", &it.attributes); err != nil {
			if secretservice.Vanished(err) {
				continue
			}
			return nil, err
		}
		if err := obj.StoreProperty("org.freedesktop.Secret.Item.Label", &it.label); err != nil {
			if secretservice.Vanished(err) {
				continue
			}
			return nil, err
		}
		it.user = it.attributes["username"]
		out = append(out, it)
	}
	return out, nil
}
