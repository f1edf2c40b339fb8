// Command browser stands in for the user's web browser in grantwire's demo and CLI tests:
// it loads the URL it is given (the authorization request grantwire opens), following
// redirects, as a browser whose user clicks "Allow" would — the local authorization server
// (internal/testworld/authserver) consents automatically and redirects to grantwire's loopback
// callback on 127.0.0.1.
//
// Point grantwire at it with BROWSER (grantwire passes the URL as the last argument):
//
//	BROWSER=/path/to/browser grantwire connect google --scopes openid
//
// It refuses any URL that is not http on a loopback address, prints nothing on success
// (the URL carries the state parameter) and exits 1 with a short reason otherwise. It
// imports the standard library only.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: browser URL")
		os.Exit(2)
	}
	if err := browse(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		os.Exit(1)
	}
}

func loopback(u *url.URL) bool {
	ip := net.ParseIP(u.Hostname())
	return u.Scheme == "http" && ip != nil && ip.IsLoopback()
}

func browse(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !loopback(u) {
		return errors.New("only http://127.0.0.1 URLs are opened (the local authorization server)")
	}
	c := &http.Client{
		Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !loopback(req.URL) {
				return errors.New("a redirect left the loopback")
			}
			if len(via) > 5 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	resp, err := c.Get(u.String())
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds the state parameter: never print it
		}
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the page answered %s", resp.Status)
	}
	return nil
}
