package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Errors about the store folder, for errors.Is.
var (
	// ErrNoStore reports a command that reads a store at a --db where
	// there is none: reads never create one, so a mistyped --db is an
	// error rather than an empty memory.
	ErrNoStore = errors.New("cli: no memor store")
	// ErrNotStore reports a --db folder that holds files but no memor
	// store: memor refuses to write its files among someone else's.
	ErrNotStore = errors.New("cli: not a memor store")
)

// createsStore reports the commands that may create the store: the ones
// that write what a user says (add, import, the servers). Every other
// command needs the store to exist.
func createsStore(cmd string) bool {
	switch cmd {
	case "add", "import", "serve", "mcp", "memor-server", "demo":
		return true
	}
	return false
}

// warmsIndexes reports whether cmd keeps the store open to serve, and so
// loads in the background the users whose indexes the last Close held
// (memor.Options.NoIndexWarmup): a one-shot command would spend those
// loads on users it never reads.
func warmsIndexes(cmd string) bool {
	switch cmd {
	case "serve", "mcp", "memor-server", "studio":
		return true
	}
	return false
}

// storeMarkers are files only a memor store (its format sidecar) or its
// Pebble database holds.
var storeMarkers = []string{"MEMOR_FORMAT", "CURRENT", "MANIFEST-*", "OPTIONS-*"}

// checkStore decides whether the command may open dir: an existing memor
// store always; a missing or empty folder only if create; anything else
// never.
func checkStore(dir string, create bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if create {
			return nil
		}
		return fmt.Errorf("%w at %s: nothing has been added there yet; check --db (or MEMOR_DB), or add something first with 'memor add'", ErrNoStore, dir)
	case err != nil:
		return fmt.Errorf("cli: store folder %s: %w", dir, err)
	}
	for _, m := range storeMarkers {
		if ms, _ := filepath.Glob(filepath.Join(dir, m)); len(ms) > 0 {
			return nil
		}
	}
	if len(ents) == 0 {
		if create {
			return nil
		}
		return fmt.Errorf("%w at %s: the folder is empty; check --db (or MEMOR_DB), or add something first with 'memor add'", ErrNoStore, dir)
	}
	return fmt.Errorf("%w: %s holds %d other file(s) (%s, ...); pass --db a new or empty folder, or the folder of an existing store", ErrNotStore, dir, len(ents), ents[0].Name())
}

// usesUser reports the commands that read or write one user (--user).
func usesUser(cmd string) bool {
	switch cmd {
	case "serve", "mcp", "memor-server", "conformance", "eval", "demo", "users", "completion", "help", "prune", "check", "import", "export", "config", "reembed", "cluster", "status":
		return false
	}
	return true
}
