package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

// kekCmd makes key-encryption keys and rotates an encrypted store's.
func (a *app) kekCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kek",
		Short: "Make a key-encryption key, or rotate an encrypted store's (after a forget)",
		Long: `An encrypted store (--kek-file, store.kek_file) seals each of its files' keys
under a key-encryption key (KEK). 'memor kek new FILE' writes a new random KEK.
'memor kek rotate NEW_FILE' writes a new KEK to NEW_FILE and re-seals the store
under it; the old KEK (--kek-file) then seals nothing still needed: destroy it
and every copy. Rotate after every forget: until the old KEK is gone, the
blocks the forgotten user's deleted files freed can be read with it.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "new FILE",
		Short: "Write a new random KEK (64 hex digits) to FILE, which must not exist",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := writeKEK(argv[0]); err != nil {
				return err
			}
			return a.done(map[string]string{"kek_file": argv[0]}, "wrote a new KEK to "+argv[0])
		},
	}, &cobra.Command{
		Use:   "rotate NEW_FILE",
		Short: "Re-seal the store under a new KEK written to NEW_FILE; then destroy the old one",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}
			old := c.get("store.kek_file")
			if old == "" {
				return usage(cmd, "the store's current KEK is needed: pass --kek-file (or set store.kek_file)")
			}
			if c.get("store.previous_kek_file") != "" {
				return usage(cmd, "--previous-kek-file is for finishing a rotation by opening the store; rotate takes only --kek-file")
			}
			if err := writeKEK(argv[0]); err != nil {
				return err
			}
			set := func(key, val string) {
				v := c.vals[key]
				v.val, v.source = val, "memor kek rotate"
				c.vals[key] = v
			}
			set("store.kek_file", argv[0])
			set("store.previous_kek_file", old)
			if err := a.withEngine(memor.Options{}, func(*memor.Engine) error { return nil }); err != nil {
				return fmt.Errorf("%w (the new KEK stays in %s: open the store with --kek-file %s --previous-kek-file %s to finish)", err, argv[0], argv[0], old)
			}
			return a.done(map[string]string{"kek_file": argv[0], "destroy": old},
				fmt.Sprintf("the store is sealed under %s; destroy %s and every copy of it", argv[0], old))
		},
	})
	return cmd
}

// writeKEK writes a new random KEK to path, readable by its owner alone.
func writeKEK(path string) error {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return configErr("KEK file: %v", err)
	}
	if _, err := fmt.Fprintln(f, hex.EncodeToString(k)); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
