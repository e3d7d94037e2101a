package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
)

// export and import move a store's episode logs, both clocks included, in
// the library's export format (see memor.ExportFormat and the README's
// "Backup: export and import").

func (a *app) exportCmd() *cobra.Command {
	var out string
	var all bool
	cmd := &cobra.Command{
		Use:   "export [-o FILE] [--all]",
		Short: "Write a backup of episodes as JSON Lines (every user, or only --user if given)",
		Long: `export writes a header line (format version, extractor, embedder) and then
every episode of every user (or only --user) in log order: what was said,
when it was said (at) and when memor recorded it (recorded_at). 'memor
import' of the file into a new store reproduces the same facts at the same
valid and transaction times.`,
		Example: `  memor export -o backup.jsonl
  memor export --user alice | memor --db /other/store import`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all && cmd.Flags().Changed("user") {
				return usage(cmd, "--all and --user: choose one")
			}
			w := a.io.Out
			var f *os.File
			if out != "" && out != "-" {
				// Written beside out and renamed over it once complete: a
				// failed export leaves an earlier backup of that name whole.
				var err error
				if f, err = os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"); err != nil {
					return err
				}
				defer func() {
					f.Close()
					os.Remove(f.Name()) // gone already once renamed
				}()
				w = f
			}
			var sum memor.ExportSummary
			err := a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				ctx := cmd.Context()
				users := []string{a.user}
				if !cmd.Flags().Changed("user") {
					var err error
					if users, err = e.Users(ctx); err != nil {
						return err
					}
				}
				total := 0
				for _, u := range users {
					fr, err := e.Freshness(ctx, u)
					if err != nil {
						return err
					}
					total += int(fr.Latest)
				}
				p := a.progressIn("export", "episodes")
				lw := &lineCounter{w: w, f: func(lines int) { p.set("episodes", min(max(lines-1, 0), total), total) }}
				var err error
				sum, err = e.Export(ctx, lw, users...)
				p.finish()
				return err
			})
			if err != nil {
				return err
			}
			if f != nil {
				if err := commitFile(f, out); err != nil {
					return err
				}
				return a.done(map[string]any{"episodes": sum.Episodes, "users": sum.Users, "file": out},
					fmt.Sprintf("exported %d episodes of %d user(s) to %s", sum.Episodes, sum.Users, out))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of stdout")
	cmd.Flags().BoolVar(&all, "all", false, "export every user (the default without --user)")
	return cmd
}

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Restore a backup written by export (FILE or stdin), both clocks kept",
		Long: `import adds the episodes of a file written by 'memor export' to this store,
keeping when each was said and when memor recorded it: facts, versions,
corrections and what AsOf answers at any (valid, known) instant are those
of the store that wrote the file.

The input is checked whole before anything is written: a line that is not
an episode memor accepts imports nothing, and the error names the line and
field. An episode already in the store (same user, recorded_at and
content) is skipped, so importing a file twice changes nothing. A user
whose stored history is later than the file's is refused (import into a
new store, or under another --user). With --user, every episode goes to
that user; a correction then cannot find its fact (a warning says so).`,
		Example: `  memor --db ./copy import backup.jsonl
  memor export --user bob | memor --db ./other import --user carol`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = a.io.In
			name := "stdin"
			var size int64
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
				in, name = f, args[0]
			}
			// Reading is counted in bytes, applying in episodes: two bars.
			read, apply := a.progressIn("import", "bytes"), (*bar)(nil)
			opts := []memor.ImportOption{memor.WithImportProgress(func(pr memor.ImportProgress) {
				switch {
				case pr.Stage == "read" && size > 0:
					read.set("reading", int(pr.Bytes), int(size))
				case pr.Stage == "apply":
					if apply == nil {
						read.finish()
						apply = a.progressIn("import", "episodes")
					}
					apply.set("applying", pr.Done, pr.Total)
				}
			})}
			if cmd.Flags().Changed("user") {
				opts = append(opts, memor.ImportAs(a.user))
			}
			var sum memor.ImportSummary
			// Bulk import: commit without fsync, sync once at the end.
			err := a.withEngine(memor.Options{NoSync: true}, func(e *memor.Engine) error {
				var err error
				if sum, err = e.Import(cmd.Context(), in, opts...); err != nil {
					return err
				}
				return e.Sync(cmd.Context())
			})
			read.finish()
			apply.finish()
			var ie *memor.ImportError
			switch {
			case errors.As(err, &ie) && !errors.Is(err, memor.ErrHistoryConflict):
				return usage(cmd, "%s: %v; nothing was imported", name, err)
			case errors.As(err, &ie):
				return fmt.Errorf("%s: %w; nothing was imported", name, err)
			case err != nil:
				return err
			}
			for _, w := range sum.Warnings {
				fmt.Fprintf(a.io.Err, "memor: import: %s\n", w)
			}
			return a.done(sum, fmt.Sprintf("imported %d episodes of %d user(s); %d skipped", sum.Episodes, sum.Users, sum.Skipped))
		},
	}
	return cmd
}

// lineCounter passes writes to w and calls f with the lines written so far.
type lineCounter struct {
	w io.Writer
	n int
	f func(lines int)
}

func (c *lineCounter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	if k := bytes.Count(b[:n], []byte{'\n'}); k > 0 {
		c.n += k
		c.f(c.n)
	}
	return n, err
}

// commitFile makes temporary file f, written in full, the file at path:
// synced, then renamed over it, then the folder synced, so that after a
// crash path holds either its old content or all of f.
func commitFile(f *os.File, path string) error {
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
