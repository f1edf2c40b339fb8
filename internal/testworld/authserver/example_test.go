package authserver_test

import (
	"fmt"

	"github.com/grantwire/grantwire/internal/testworld/authserver"
)

// A server on 127.0.0.1 with automatic consent, PKCE, rotation and reuse detection.
func ExampleStart() {
	s, err := authserver.Start(authserver.Config{ClientID: "client-1", Account: "ada@example.com"}, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rt := s.Issue([]string{"mail.read"}) // as a past authorization would have
	fmt.Println(s.Live(rt), s.LiveRefreshTokens())
	// Output: true 1
}
