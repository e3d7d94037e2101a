// Package cli is memor's command line: the cobra commands behind
// cmd/memor (and cmd/memor-server, which is `memor mcp`). The binaries
// only call [Run]; everything they do lives here, so it can be tested.
//
// # Conventions
//
//   - Global flags: --db (store folder; default $MEMOR_DB, else the user
//     data folder, see [DefaultDB]), --user (default $MEMOR_USER, else
//     "me"), --json (machine output for every command that prints data).
//   - Exit codes: 0 ok, 1 runtime error, 2 usage error (bad flag, argument
//     or input value). Errors go to stderr as one line that says what to do.
//   - Data goes to stdout, progress and diagnostics to stderr; progress
//     bars are drawn only when stderr is a terminal.
//   - Only commands that write what a user says (add, import, serve once
//     listening, mcp, demo) create a store; every other command on a
//     missing one fails with [ErrNoStore], and a folder of other files is
//     refused with [ErrNotStore] (see createsStore).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memor-db/memor"
	inst "github.com/memor-db/memor/internal/instant"
)

// Exit codes of Run.
const (
	ExitOK      = 0
	ExitRuntime = 1
	ExitUsage   = 2
)

// DefaultUser is the user of commands run without --user or MEMOR_USER.
const DefaultUser = "me"

// Version is the version the binaries report; set it with
// -ldflags "-X github.com/memor-db/memor/cli.Version=v1.2.3", or it is taken
// from the build information.
var Version = ""

// IO is what a command line talks to. Getenv nil means os.Getenv.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
}

// StdIO is the process's standard streams and environment.
func StdIO() IO { return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv} }

// usageError marks a mistake in how the command was called (exit 2).
type usageError struct {
	cmd string
	err error
}

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usage(cmd *cobra.Command, format string, args ...any) error {
	return usageError{cmd.CommandPath(), fmt.Errorf(format, args...)}
}

type app struct {
	io   IO
	db   string
	user string
	json bool
	root *cobra.Command
	// The configuration (config.go): --config, the settings' flags, and
	// what loadConfig resolved.
	configPath string
	flagVals   map[string]*string
	cfg        *config
	cmd        string // the command running, for the store rule (createsStore)
}

// Run executes the command line args (without the program name) and
// returns the exit code. ctx ends long-running commands (serve, mcp,
// import) gracefully.
func Run(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = os.Getenv
	}
	if stdio.In == nil {
		stdio.In = strings.NewReader("")
	}
	a := &app{io: stdio}
	root := a.rootCmd()
	return a.execute(ctx, root, args)
}

// execute runs root as the command line of a binary: exit code, and the
// error as one line on stderr.
func (a *app) execute(ctx context.Context, root *cobra.Command, args []string) int {
	stdio := a.io
	a.root = root
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitRuntime
	var ue usageError
	if errors.As(err, &ue) || isInputError(err) {
		code = ExitUsage
	}
	fmt.Fprintln(stdio.Err, oneLine(errorLine(err)+hint(err, ue)))
	return code
}

// isInputError reports engine errors caused by what the caller typed.
func isInputError(err error) bool {
	for _, s := range []error{memor.ErrInvalidUser, memor.ErrInvalidText, memor.ErrInvalidTime,
		memor.ErrInvalidFact, memor.ErrInvalidSpeaker, memor.ErrTooLarge, errConfig} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// hint says what to do about err, as a "; ..." suffix.
func hint(err error, ue usageError) string {
	msg := err.Error()
	switch {
	case ue.cmd != "":
		return "; run '" + ue.cmd + " --help'"
	case errors.Is(err, memor.ErrInvalidUser):
		return "; pass --user NAME or set MEMOR_USER"
	case errors.Is(err, memor.ErrNotContested):
		return "; list contested facts with 'memor conflicts'"
	case errors.Is(err, memor.ErrNotFound) && strings.Contains(msg, "fact"):
		return "; list fact IDs with 'memor state' or 'memor history'"
	case errors.Is(err, memor.ErrFormatTooNew):
		return "; this store was written by a newer memor: upgrade memor"
	case errors.Is(err, memor.ErrEmbedderMismatch):
		return "; configure the store's embedder (see 'memor config'), or move the store to this one with 'memor reembed'"
	case errors.Is(err, memor.ErrReembedUnfinished):
		return "; run 'memor reembed' again with the new embedder configured: it resumes"
	case errors.Is(err, memor.ErrCheck):
		return "; run 'memor rebuild --all' to recompute facts and indexes from the episode log"
	case errors.Is(err, fs.ErrNotExist):
		return "; check the path"
	case errors.Is(err, fs.ErrPermission):
		return "; check the permissions, or pass another --db"
	case errors.Is(err, memor.ErrLocked):
		return "; another memor process has this store open (is 'memor serve' or 'memor mcp' running?): stop it or pass --db"
	}
	return ""
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "memor",
		Short: "memor: a bitemporal memory for LLM agents",
		Long: `memor remembers what users say as facts that know when they were true and when
they were learned, resolves contradictions by time, and answers what is true
now, what was true then, and what was believed then.

Start with 'memor demo'.

The store lives in --db, default $MEMOR_DB, else the user data folder:
$XDG_DATA_HOME/memor or ~/.local/share/memor on Linux and BSD,
~/Library/Application Support/memor on macOS, %LocalAppData%\memor on Windows.
Times are RFC 3339 (2026-02-01T09:00:00Z) or dates (2026-02-01, midnight UTC).
Exit codes: 0 ok, 1 runtime error, 2 usage error.`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return usage(cmd, "unknown command %q: did you mean %q?", args[0], s[0])
				}
				return usage(cmd, "unknown command %q", args[0])
			}
			return cmd.Help()
		},
	}
	// `memor completion bash|zsh|fish|powershell` prints a completion script.
	root.CompletionOptions.HiddenDefaultCmd = false
	a.globalFlags(root)
	root.AddCommand(a.addCmd(), a.queryCmd(), a.stateCmd(), a.historyCmd(), a.asOfCmd(), a.conflictsCmd(),
		a.correctCmd(), a.acceptCmd(), a.forgetCmd(), a.pruneCmd(), a.rebuildCmd(), a.checkCmd(), a.importCmd(), a.exportCmd(),
		a.serveCmd(), a.mcpCmd(), a.demoCmd(), a.conformanceCmd(), a.evalCmd(), a.usersCmd(),
		a.configCmd(), a.reembedCmd(), a.studioCmd(), a.kekCmd(), a.clusterCmd())
	return root
}

// globalFlags gives root --db, --user and --json, and the checks every
// command runs first.
func (a *app) globalFlags(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError{cmd.CommandPath(), err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.db, "db", "", "store folder (default $MEMOR_DB, else the user data folder)")
	pf.StringVar(&a.user, "user", "", "user ID (default $MEMOR_USER, else \""+DefaultUser+"\")")
	pf.BoolVar(&a.json, "json", false, "machine-readable JSON output")
	a.configFlags(pf)
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		a.cmd = cmd.Name()
		if !cmd.Flags().Changed("user") {
			a.user = a.io.Getenv("MEMOR_USER")
			if a.user == "" {
				a.user = DefaultUser
			}
		}
		// Before the store is opened: a bad --user is a usage mistake,
		// whether or not the store exists.
		if usesUser(a.cmd) {
			if err := memor.ValidUser(a.user); err != nil {
				return err
			}
		}
		// A bad configuration fails every command before it starts.
		_, err := a.loadConfig()
		return err
	}
}

// args wraps a cobra argument check so that its failure is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{cmd.CommandPath(), err}
		}
		return nil
	}
}

// DefaultDB is the store folder used without --db: $MEMOR_DB if set, else
// $XDG_DATA_HOME/memor, else the OS user data folder joined with "memor":
// ~/.local/share on Linux and BSD, ~/Library/Application Support on macOS
// (os.UserConfigDir), %LocalAppData% on Windows (os.UserCacheDir).
func DefaultDB(getenv func(string) string) (string, error) {
	if v := getenv("MEMOR_DB"); v != "" {
		return v, nil
	}
	if v := getenv("XDG_DATA_HOME"); v != "" {
		return filepath.Join(v, "memor"), nil
	}
	var dir string
	var err error
	switch runtime.GOOS {
	case "windows":
		dir, err = os.UserCacheDir()
	case "darwin", "ios":
		dir, err = os.UserConfigDir()
	default:
		dir, err = os.UserHomeDir()
		dir = filepath.Join(dir, ".local", "share")
	}
	if err != nil {
		return "", fmt.Errorf("cli: no user data folder (%w); pass --db or set MEMOR_DB", err)
	}
	return filepath.Join(dir, "memor"), nil
}

// dbPath resolves --db.
func (a *app) dbPath() (string, error) {
	if a.db != "" {
		return a.db, nil
	}
	if a.io.Getenv("MEMOR_DB") == "" {
		if c, err := a.loadConfig(); err != nil {
			return "", err
		} else if v := c.get("db"); v != "" {
			return v, nil
		}
	}
	return DefaultDB(a.io.Getenv)
}

// open opens the store for a command; the caller closes it.
func (a *app) open(o memor.Options) (*memor.Engine, error) {
	dir, err := a.dbPath()
	if err != nil {
		return nil, err
	}
	if err := checkStore(dir, createsStore(a.cmd)); err != nil {
		return nil, err
	}
	if o, err = a.engineOptions(a.root.Context(), o); err != nil {
		return nil, err
	}
	o.NoIndexWarmup = o.NoIndexWarmup || !warmsIndexes(a.cmd)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cli: create store folder: %w", err)
	}
	return memor.Open(dir, o)
}

// withEngine opens the store, runs f, and closes the store, keeping the
// first error.
func (a *app) withEngine(o memor.Options, f func(*memor.Engine) error) (err error) {
	e, err := a.open(o)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return f(e)
}

// parseTime parses a time flag; a bad value is a usage error.
func parseTime(cmd *cobra.Command, flag, s string, def time.Time) (time.Time, error) {
	t, err := inst.Parse(s, def)
	if err != nil {
		return t, usageError{cmd.CommandPath(), fmt.Errorf("--%s: %w", flag, err)}
	}
	return t, nil
}
