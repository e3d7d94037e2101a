package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/jsontext"
)

// The transfer format is JSON Lines: one memor.Episode per line, as the
// library marshals it (user, seq, kind, at, recorded_at, text, ops,
// correct), oldest first per user. Replaying the episodes through Add,
// AssertBatch/End and Correct rebuilds the same valid-time history in
// another store; transaction times are those of the import.

func (a *app) exportCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export [-o FILE]",
		Short: "Write episodes as JSON Lines (every user, or only --user if given)",
		Example: `  memor export -o backup.jsonl
  memor export --user alice | memor --db /other/store import`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := a.io.Out
			var f *os.File
			if out != "" && out != "-" {
				var err error
				if f, err = os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			bw := bufio.NewWriterSize(w, 1<<16)
			enc := json.NewEncoder(bw)
			n, users := 0, 0
			err := a.withEngine(memor.Options{}, func(e *memor.Engine) error {
				list := []string{a.user}
				if !cmd.Flags().Changed("user") {
					var err error
					if list, err = e.Users(cmd.Context()); err != nil {
						return err
					}
				}
				bar := a.progressIn("export", "users")
				for i, u := range list {
					eps, err := e.Episodes(cmd.Context(), u)
					if err != nil {
						return fmt.Errorf("export %q: %w", u, err)
					}
					for _, ep := range eps {
						if err := enc.Encode(ep); err != nil {
							return err
						}
					}
					n += len(eps)
					users += min(1, len(eps))
					bar.set(u, i+1, len(list))
				}
				bar.finish()
				return nil
			})
			if err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if f != nil {
				if err := f.Close(); err != nil {
					return err
				}
				return a.done(map[string]any{"episodes": n, "users": users, "file": out},
					fmt.Sprintf("exported %d episodes of %d user(s) to %s", n, users, out))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of stdout")
	return cmd
}

func (a *app) importCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Replay JSON Lines episodes (from export) into this store; FILE or stdin",
		Long: `import replays episodes written by 'memor export': what users said at the
time they said it, structured facts, and corrections. With --user, every
episode goes to that user instead of the one recorded in the file (a
correction then cannot find its fact and is skipped with a warning).

The input is checked whole before anything is written: a line that is not
an episode memor would accept (not JSON, an unknown kind, an invalid user
ID, text or time) imports nothing, and the error names the line. A failure
while writing (a full disk, an interrupt) can leave the episodes before it
imported; import again into a fresh store.`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, name, size, cleanup, err := a.importInput(args)
			if err != nil {
				return err
			}
			defer cleanup()
			bar := a.progressIn("import", "bytes")
			var st importStats
			// Bulk import: acknowledge without fsync, sync once at the end.
			err = a.withEngine(memor.Options{NoSync: true}, func(e *memor.Engine) error {
				remap := cmd.Flags().Changed("user")
				// First pass: every line must be an episode the engine
				// accepts, so that a bad line imports nothing.
				err := eachEpisode(cmd, in, name, remap, a.user, func(ep memor.Episode, line int, _ int64) error {
					if ep.Kind == memor.EpisodeText && strings.TrimSpace(ep.Text) == "" {
						return nil // skipped by the replay
					}
					if err := e.CheckEpisode(ep); err != nil {
						return usage(cmd, "%s: line %d (user %q, seq %d): %v; nothing was imported", name, line, ep.User, ep.Seq, err)
					}
					return nil
				})
				if err != nil {
					return err
				}
				if _, err := in.Seek(0, io.SeekStart); err != nil {
					return err
				}
				touched := map[string]bool{}
				err = eachEpisode(cmd, in, name, remap, a.user, func(ep memor.Episode, line int, offset int64) error {
					if err := a.replay(cmd, e, ep, &st); err != nil {
						return fmt.Errorf("%s: line %d (user %q, seq %d): %w", name, line, ep.User, ep.Seq, err)
					}
					touched[ep.User] = true
					if size > 0 && bar != nil {
						bar.set(fmt.Sprintf("%d episodes", st.episodes), int(offset), int(size))
					}
					return nil
				})
				if err != nil {
					return err
				}
				bar.set(fmt.Sprintf("%d episodes", st.episodes), int(size), int(size)) // the whole input is read
				users := make([]string, 0, len(touched))
				for u := range touched {
					users = append(users, u)
				}
				slices.Sort(users)
				for _, u := range users {
					if err := e.Flush(cmd.Context(), u); err != nil {
						return err
					}
				}
				st.users = len(users)
				return e.Sync(cmd.Context())
			})
			bar.finish()
			if err != nil {
				return err
			}
			return a.done(map[string]int{"episodes": st.episodes, "users": st.users, "skipped": st.skipped},
				fmt.Sprintf("imported %d episodes of %d user(s); %d skipped", st.episodes, st.users, st.skipped))
		},
	}
	return cmd
}

// importInput opens the import's input for two passes: FILE if it is a
// regular file, else (stdin, a pipe) a private temporary copy, removed by
// cleanup.
func (a *app) importInput(args []string) (in io.ReadSeeker, name string, size int64, cleanup func(), err error) {
	var r io.Reader = a.io.In
	name = "stdin"
	closeSrc := func() {}
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, "", 0, nil, err
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return f, args[0], fi.Size(), func() { f.Close() }, nil
		}
		r, name, closeSrc = f, args[0], func() { f.Close() }
	}
	tmp, err := os.CreateTemp("", "memor-import-*.jsonl")
	if err != nil {
		closeSrc()
		return nil, "", 0, nil, err
	}
	done := func() {
		closeSrc()
		tmp.Close()
		os.Remove(tmp.Name())
	}
	n, err := io.Copy(tmp, r)
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		done()
		return nil, "", 0, nil, fmt.Errorf("%s: %w", name, err)
	}
	return tmp, name, n, done, nil
}

// eachEpisode decodes in, one episode a line (blank lines skipped), and
// calls f with each, its line number and the input offset after it. A line
// that is not one exported episode is a usage error naming the line.
func eachEpisode(cmd *cobra.Command, in io.Reader, name string, remap bool, user string,
	f func(ep memor.Episode, line int, offset int64) error) error {
	br := bufio.NewReaderSize(in, 1<<16)
	var offset int64
	for line := 1; ; line++ {
		if err := cmd.Context().Err(); err != nil {
			return err
		}
		b, err := br.ReadBytes('\n')
		offset += int64(len(b))
		if len(b) == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var ep memor.Episode
		err = json.Unmarshal(b, &ep)
		if err == nil {
			// encoding/json would turn invalid UTF-8 and half surrogate
			// pairs into U+FFFD: two users would become one.
			err = jsontext.Lossy(b)
		}
		if err != nil {
			return usage(cmd, "%s: line %d: not an exported episode: %v; nothing was imported", name, line, err)
		}
		if remap {
			ep.User = user
		}
		if err := f(ep, line, offset); err != nil {
			return err
		}
	}
}

type importStats struct {
	episodes, users, skipped int
}

// replay applies one exported episode through the public write path.
func (a *app) replay(cmd *cobra.Command, e *memor.Engine, ep memor.Episode, st *importStats) error {
	ctx := cmd.Context()
	switch ep.Kind {
	case memor.EpisodeText:
		if strings.TrimSpace(ep.Text) == "" {
			// Older stores accepted blank episodes; Add refuses them.
			st.skipped++
			fmt.Fprintf(a.io.Err, "memor: import: skipped a blank episode of %q\n", ep.User)
			return nil
		}
		var opts []memor.AddOption
		if !ep.At.IsZero() {
			opts = append(opts, memor.At(ep.At))
		}
		if ep.Speaker != "" {
			opts = append(opts, memor.Speaker(ep.Speaker))
		}
		if _, err := e.Add(ctx, ep.User, ep.Text, opts...); err != nil {
			return err
		}
	case memor.EpisodeFacts:
		var batch []memor.FactInput
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			_, err := e.AssertBatch(ctx, ep.User, batch)
			batch = nil
			return err
		}
		for _, op := range ep.Ops {
			switch op.Kind {
			case extract.Assert:
				batch = append(batch, memor.FactInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
					Context: op.Context, ValidFrom: op.ValidFrom, Confidence: op.Confidence, Quote: op.Quote})
			case extract.End:
				if err := flush(); err != nil {
					return err
				}
				if _, err := e.End(ctx, ep.User, memor.EndInput{Subject: op.Subject, Predicate: op.Predicate,
					Object: op.Object, Context: op.Context, At: op.ValidFrom, Quote: op.Quote}); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unknown op kind %d", op.Kind)
			}
		}
		if err := flush(); err != nil {
			return err
		}
	case memor.EpisodeCorrect:
		if ep.Correct == nil {
			return errors.New("correction episode without its fact")
		}
		// The fact must have been applied before it can be retracted.
		if err := e.Flush(ctx, ep.User); err != nil {
			return err
		}
		err := e.Correct(ctx, ep.User, ep.Correct.FactID)
		if errors.Is(err, memor.ErrNotFound) {
			fmt.Fprintf(a.io.Err, "memor: import: skipped correction of fact %s for %q: no such fact in this store\n",
				ep.Correct.FactID, ep.User)
			st.skipped++
			return nil
		}
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown episode kind %d", ep.Kind)
	}
	st.episodes++
	return nil
}
