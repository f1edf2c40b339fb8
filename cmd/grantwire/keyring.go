package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/shells/native"
)

func (a *app) keyringCmd() *cobra.Command {
	return a.command(spec{
		use:   "keyring",
		short: "Unlock the OS credential store's keyring",
		long: `Commands about the OS credential store that grantwire keeps every secret in: unlock unlocks a
locked gnome-keyring collection, the fix grantwire prints when the keyring is locked.`,
		example: `  grantwire keyring unlock`,
	}, a.keyringUnlockCmd())
}

func (a *app) keyringUnlockCmd() *cobra.Command {
	return a.command(spec{
		use:   "unlock",
		short: "Unlock the Secret Service's default keyring with its password (gnome-keyring)",
		long: `Unlock the default collection of the Secret Service that grantwire uses (the login keyring),
reading its password from the terminal without echo, or as one line on stdin. It unlocks the
gnome-keyring-daemon already running on the session bus ($DBUS_SESSION_BUS_ADDRESS), where
"gnome-keyring-daemon --unlock" would start a second daemon and leave the first locked. A
collection already unlocked stays so; a wrong password leaves it locked (exit 5). Other
Secret Services (KeePassXC, KWallet) are unlocked in their own window.`,
		example: `  grantwire keyring unlock
  grantwire keyring unlock < ~/.config/keyring-password`,
		args: noArgs,
		run: operation[string]{
			do: func(ctx context.Context, _ []string) (string, error) {
				password, err := a.secretLine("", "keyring password")
				if err != nil {
					return "", err
				}
				return native.UnlockDefaultCollection(ctx, a.Getenv, password)
			},
			json: func(coll string, _ []string) any { return map[string]any{"collection": coll, "locked": false} },
			render: func(coll string, _ []string) error {
				a.printf("Unlocked %s.\n", coll)
				return nil
			},
		}.runE(a),
	})
}
