package main

import (
	"github.com/spf13/cobra"

	"github.com/grantwire/grantwire/shells/native"
)

func (a *app) keyringCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keyring",
		Short: "Unlock the OS credential store's keyring",
		Long: `Commands about the OS credential store that grantwire keeps every secret in: unlock unlocks a
locked gnome-keyring collection, the fix grantwire prints when the keyring is locked.`,
		Example: `  grantwire keyring unlock`,
		Args:    cobra.ArbitraryArgs,
		RunE:    a.group,
	}
	cmd.AddCommand(a.keyringUnlockCmd())
	return cmd
}

func (a *app) keyringUnlockCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "unlock",
		Short: "Unlock the Secret Service's default keyring with its password (gnome-keyring)",
		Long: `Unlock the default collection of the Secret Service that grantwire uses (the login keyring),
reading its password from the terminal without echo, or as one line on stdin. It unlocks the
gnome-keyring-daemon already running on the session bus ($DBUS_SESSION_BUS_ADDRESS), where
"gnome-keyring-daemon --unlock" would start a second daemon and leave the first locked. A
collection already unlocked stays so; a wrong password leaves it locked (exit 5). Other
Secret Services (KeePassXC, KWallet) are unlocked in their own window.`,
		Example: `  grantwire keyring unlock
  grantwire keyring unlock < ~/.config/keyring-password`,
		Args: noArgs,
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			password, err := a.secretLine("", "keyring password")
			if err != nil {
				return err
			}
			coll, err := native.UnlockDefaultCollection(cmd.Context(), a.Getenv, password)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"collection": coll, "locked": false})
			}
			a.printf("Unlocked %s.\n", coll)
			return nil
		}),
	}
}
