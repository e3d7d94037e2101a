// Package diskscan searches a store's folder for bytes: the forgetting
// tests use it to prove that no file still holds a forgotten user's data.
package diskscan

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// FilesContaining lists the base names of the files under dir whose bytes
// contain any of needles. Files that vanish during the walk (Pebble
// deletes obsolete files in the background) are skipped.
func FilesContaining(dir string, needles ...[]byte) ([]string, error) {
	var hits []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted between listing and visiting
		}
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted between visiting and reading
		}
		if err != nil {
			return err
		}
		for _, n := range needles {
			if bytes.Contains(data, n) {
				hits = append(hits, filepath.Base(path))
				break
			}
		}
		return nil
	})
	return hits, err
}
