package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/embed/remote"
	"github.com/memor-db/memor/extract/llm"
)

// errConfig marks a configuration that cannot be used: a bad value, an
// unknown key, a back end without a model, an unreachable endpoint.
var errConfig = errors.New("configuration")

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errConfig}, args...)...)
}

// setting is one configuration value: its key in the config file, the
// environment variable and flag that also set it (either may be absent),
// its default, and whether it is a secret (never printed).
type setting struct {
	key, env, flag, def, help string
	secret                    bool
}

// settings is every value of the configuration. Precedence: flag, then
// environment, then config file, then default. The flags are on every
// command (persistent), so `memor-server` (which is `memor mcp`) takes
// them too. Secrets have no flag: a flag's value shows in the process
// list.
var settings = []setting{
	{key: "db", env: "MEMOR_DB", help: "store folder (default: the user data folder)"},
	{key: "extractor.kind", env: "MEMOR_EXTRACTOR", flag: "extractor", def: "auto", help: "auto (llm when an LLM model is set, else rules) | rules | llm"},
	{key: "llm.base_url", env: llm.EnvBaseURL, flag: "llm-base-url", help: "OpenAI-compatible API root, e.g. http://localhost:11434/v1 (default OpenAI's)"},
	{key: "llm.model", env: llm.EnvModel, flag: "llm-model", help: "chat model of the LLM extractor, judge and reranker"},
	{key: "llm.api_key", env: llm.EnvAPIKey, secret: true, help: "bearer token of the LLM endpoint"},
	{key: "llm.timeout", env: "MEMOR_LLM_TIMEOUT", flag: "llm-timeout", def: "60s", help: "bound of one LLM call, retries included"},
	{key: "judge.kind", env: "MEMOR_JUDGE", flag: "judge", def: "auto", help: "auto (llm when the extractor is llm) | none | llm: decides the cardinality of unknown predicates"},
	{key: "judge.base_url", env: "MEMOR_JUDGE_BASE_URL", help: "judge endpoint (default llm.base_url)"},
	{key: "judge.model", env: "MEMOR_JUDGE_MODEL", help: "judge model (default llm.model)"},
	{key: "judge.api_key", env: "MEMOR_JUDGE_API_KEY", secret: true, help: "judge bearer token (default llm.api_key)"},
	{key: "judge.timeout", env: "MEMOR_JUDGE_TIMEOUT", help: "judge call bound (default llm.timeout)"},
	{key: "reranker.kind", env: "MEMOR_RERANKER", flag: "reranker", def: "none", help: "none | llm: reorders each query's top candidates in one call"},
	{key: "reranker.base_url", env: "MEMOR_RERANKER_BASE_URL", help: "reranker endpoint (default llm.base_url)"},
	{key: "reranker.model", env: "MEMOR_RERANKER_MODEL", help: "reranker model (default llm.model)"},
	{key: "reranker.api_key", env: "MEMOR_RERANKER_API_KEY", secret: true, help: "reranker bearer token (default llm.api_key)"},
	{key: "reranker.timeout", env: "MEMOR_RERANKER_TIMEOUT", help: "reranker call bound (default llm.timeout)"},
	{key: "embedder.kind", env: "MEMOR_EMBEDDER", flag: "embedder", def: "auto", help: "auto (http when an embedding base URL is set, else hash) | hash | http"},
	{key: "embedder.base_url", env: remote.EnvBaseURL, flag: "embed-base-url", help: "OpenAI-compatible embeddings API root"},
	{key: "embedder.model", env: remote.EnvModel, flag: "embed-model", help: "embedding model"},
	{key: "embedder.api_key", env: remote.EnvAPIKey, secret: true, help: "bearer token of the embeddings endpoint"},
	{key: "embedder.timeout", env: "MEMOR_EMBED_TIMEOUT", flag: "embed-timeout", def: "30s", help: "bound of one embeddings request"},
	{key: "embedder.dim", env: "MEMOR_EMBED_DIM", flag: "embed-dim", def: "0", help: "expected dimension (0: learned from the endpoint)"},
	{key: "fallback", env: "MEMOR_FALLBACK", flag: "fallback", def: "false", help: "an unreachable back end is a warning and its offline default is used (rules, no judge, no reranker, hash)"},
	{key: "store.durability", env: "MEMOR_DURABILITY", flag: "durability", def: "sync", help: "sync (every write durable when acknowledged) | nosync (faster; a crash may lose the last writes)"},
	{key: "store.index_cache", env: "MEMOR_INDEX_CACHE", flag: "index-cache", def: "1GiB", help: "memory bound of the loaded per-user indexes (-1: none)"},
	{key: "store.block_cache", env: "MEMOR_BLOCK_CACHE", flag: "block-cache", def: "64MiB", help: "storage block cache"},
	{key: "store.kek_file", env: "MEMOR_KEK_FILE", flag: "kek-file", help: "file holding the key-encryption key (64 hex digits): the store's files are encrypted (see README, Encryption and erasure); keep it off the store's disks"},
	{key: "store.previous_kek_file", env: "MEMOR_PREVIOUS_KEK_FILE", flag: "previous-kek-file", help: "the KEK the store was last opened with: opening re-seals the store under kek-file (a rotation); destroy it afterwards"},
}

// configFile is the config file's shape beside the flat settings: the
// predicates the engine registers.
type configFile struct {
	Predicates []predicateConf `toml:"predicates"`
}

type predicateConf struct {
	Name        string   `toml:"name" json:"name"`
	Cardinality string   `toml:"cardinality" json:"cardinality"`
	Aliases     []string `toml:"aliases" json:"aliases,omitempty"`
	Gloss       string   `toml:"gloss" json:"gloss,omitempty"`
	Topic       []string `toml:"topic" json:"topic,omitempty"`
	Note        string   `toml:"note" json:"note,omitempty"`
	Relation    bool     `toml:"relation" json:"relation,omitempty"`
}

// value is a setting's effective value and where it came from.
type value struct {
	setting
	val, source string
}

// config is the resolved configuration.
type config struct {
	file       string // the config file read, "" if none
	vals       map[string]value
	predicates []memor.Predicate
	predConfs  []predicateConf
}

func (c *config) get(key string) string { return c.vals[key].val }

// configFlags registers the settings' flags (and --config) on the root.
func (a *app) configFlags(pf *pflag.FlagSet) {
	pf.StringVar(&a.configPath, "config", "", "config file (TOML; default $MEMOR_CONFIG, else $XDG_CONFIG_HOME/memor/config.toml if it exists)")
	a.flagVals = map[string]*string{}
	for _, s := range settings {
		if s.flag == "" {
			continue
		}
		v := new(string)
		a.flagVals[s.flag] = v
		pf.StringVar(v, s.flag, "", s.help)
		if s.key == "fallback" {
			pf.Lookup(s.flag).NoOptDefVal = "true" // --fallback alone
		}
	}
}

// configFilePath is the config file to read: --config, $MEMOR_CONFIG, or
// the default path if a file is there. explicit: the user named it, so
// it must exist.
func (a *app) configFilePath() (path string, explicit bool) {
	if a.configPath != "" {
		return a.configPath, true
	}
	if v := a.io.Getenv("MEMOR_CONFIG"); v != "" {
		return v, true
	}
	dir := a.io.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		if home := a.io.Getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if dir == "" {
		return "", false
	}
	return filepath.Join(dir, "memor", "config.toml"), false
}

// loadConfig resolves every setting (flag > env > file > default) and
// validates the result.
func (a *app) loadConfig() (*config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	c := &config{vals: map[string]value{}}
	fileVals := map[string]string{}
	path, explicit := a.configFilePath()
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			c.file = path
			if err := parseConfigFile(path, data, fileVals, c); err != nil {
				return nil, err
			}
		case explicit || !errors.Is(err, os.ErrNotExist):
			return nil, configErr("config file %s: %v", path, err)
		}
	}
	for _, s := range settings {
		v := value{setting: s, val: s.def, source: "default"}
		if fv, ok := fileVals[s.key]; ok {
			v.val, v.source = fv, "file "+c.file
		}
		if s.env != "" {
			if ev := a.io.Getenv(s.env); ev != "" {
				v.val, v.source = ev, "env "+s.env
			}
		}
		if s.flag != "" && a.root.PersistentFlags().Changed(s.flag) {
			v.val, v.source = *a.flagVals[s.flag], "flag --"+s.flag
		}
		if s.key == "db" && a.db != "" {
			v.val, v.source = a.db, "flag --db"
		}
		c.vals[s.key] = v
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	a.cfg = c
	return c, nil
}

// parseConfigFile reads the TOML file into flat "section.key" values and
// the predicates. An unknown key is an error: a typo must not be ignored.
func parseConfigFile(path string, data []byte, out map[string]string, c *config) error {
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return configErr("config file %s: %v", path, err)
	}
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
	}
	for _, k := range md.Keys() {
		key := k.String()
		if strings.HasPrefix(key, "predicates") {
			continue
		}
		v, err := scalar(raw, k)
		if err != nil {
			return configErr("config file %s: %s: %v", path, key, err)
		}
		if v == nil {
			if !known[key] && !isSection(key) {
				return configErr("config file %s: unknown key %q", path, key)
			}
			continue
		}
		if !known[key] {
			return configErr("config file %s: unknown key %q", path, key)
		}
		out[key] = fmt.Sprint(v)
	}
	var f configFile
	fmd, err := toml.Decode(string(data), &f)
	if err != nil {
		return configErr("config file %s: predicates: %v", path, err)
	}
	for _, k := range fmd.Undecoded() {
		if strings.HasPrefix(k.String(), "predicates.") {
			return configErr("config file %s: unknown key %q", path, k.String())
		}
	}
	c.predConfs = f.Predicates
	return nil
}

func isSection(key string) bool {
	for _, s := range settings {
		if strings.HasPrefix(s.key, key+".") {
			return true
		}
	}
	return false
}

// scalar returns the value at key k of raw, or nil for a table.
func scalar(raw map[string]any, k toml.Key) (any, error) {
	var cur any = raw
	for _, part := range k {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("not a table")
		}
		cur = m[part]
	}
	switch v := cur.(type) {
	case map[string]any:
		return nil, nil
	case string, int64, float64, bool:
		return v, nil
	default:
		return nil, fmt.Errorf("value of type %T: want a string, number or boolean", cur)
	}
}

// validate checks every value; the first bad one is the error.
func (c *config) validate() error {
	oneOf := func(key string, allowed ...string) error {
		v := c.get(key)
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return configErr("%s = %q (%s): want %s", key, v, c.vals[key].source, strings.Join(allowed, " | "))
	}
	for _, err := range []error{
		oneOf("extractor.kind", "auto", "rules", "llm"),
		oneOf("judge.kind", "auto", "none", "llm"),
		oneOf("reranker.kind", "none", "llm"),
		oneOf("embedder.kind", "auto", "hash", "http"),
		oneOf("store.durability", "sync", "nosync"),
	} {
		if err != nil {
			return err
		}
	}
	for _, k := range []string{"llm.timeout", "judge.timeout", "reranker.timeout", "embedder.timeout"} {
		if _, err := c.duration(k); err != nil {
			return err
		}
	}
	for _, k := range []string{"store.index_cache", "store.block_cache"} {
		if _, err := c.size(k); err != nil {
			return err
		}
	}
	if _, err := c.boolean("fallback"); err != nil {
		return err
	}
	if d, err := strconv.Atoi(c.get("embedder.dim")); err != nil || d < 0 {
		return configErr("embedder.dim = %q (%s): want a dimension ≥ 0", c.get("embedder.dim"), c.vals["embedder.dim"].source)
	}
	if c.extractor() == "llm" && c.get("llm.model") == "" {
		return configErr("the llm extractor needs a model: set %s, llm.model in the config file, or --llm-model", llm.EnvModel)
	}
	for _, role := range []string{"judge", "reranker"} {
		if c.kind(role) == "llm" && c.endpoint(role).model == "" {
			return configErr("the llm %s needs a model: set %s, llm.model or %s.model", role, llm.EnvModel, role)
		}
	}
	if c.embedderKind() == "http" {
		if c.get("embedder.base_url") == "" {
			return configErr("the http embedder needs a base URL: set %s, embedder.base_url or --embed-base-url", remote.EnvBaseURL)
		}
		if c.get("embedder.model") == "" {
			return configErr("the http embedder needs a model: set %s, embedder.model or --embed-model", remote.EnvModel)
		}
	}
	for _, p := range c.predConfs {
		var card memor.Cardinality
		switch strings.ToLower(p.Cardinality) {
		case "one":
			card = memor.One
		case "many":
			card = memor.Many
		default:
			return configErr("predicate %q: cardinality %q: want one | many", p.Name, p.Cardinality)
		}
		c.predicates = append(c.predicates, memor.Predicate{Name: p.Name, Cardinality: card, Aliases: p.Aliases,
			Gloss: p.Gloss, Topic: p.Topic, Note: p.Note, Relation: p.Relation})
	}
	return nil
}

func (c *config) duration(key string) (time.Duration, error) {
	v := c.get(key)
	if v == "" {
		return 0, nil // inherits llm.timeout
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, configErr("%s = %q (%s): want a positive duration such as 30s", key, v, c.vals[key].source)
	}
	return d, nil
}

func (c *config) boolean(key string) (bool, error) {
	v := c.get(key)
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, configErr("%s = %q (%s): want true or false", key, v, c.vals[key].source)
	}
	return b, nil
}

// size parses a byte size: a number with an optional KB, MB, GB (powers
// of 1000) or KiB, MiB, GiB (powers of 1024) suffix; -1 is "no bound".
func (c *config) size(key string) (int64, error) {
	v := strings.TrimSpace(c.get(key))
	bad := configErr("%s = %q (%s): want a size such as 512MiB", key, v, c.vals[key].source)
	if v == "-1" {
		return -1, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		s string
		m int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(v, u.s) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.s)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, bad
	}
	return n * mult, nil
}

// extractor is the extractor kind with auto resolved.
func (c *config) extractor() string {
	if k := c.get("extractor.kind"); k != "auto" {
		return k
	}
	if c.get("llm.model") != "" {
		return "llm"
	}
	return "rules"
}

// kind is the judge's or reranker's kind with auto resolved: the judge
// follows the extractor.
func (c *config) kind(role string) string {
	k := c.get(role + ".kind")
	if k == "auto" {
		if c.extractor() == "llm" {
			return "llm"
		}
		return "none"
	}
	return k
}

func (c *config) embedderKind() string {
	if k := c.get("embedder.kind"); k != "auto" {
		return k
	}
	if c.get("embedder.base_url") != "" {
		return "http"
	}
	return "hash"
}

type endpoint struct {
	baseURL, model, apiKey string
	timeout                time.Duration
}

// endpoint is the LLM endpoint of role ("llm", "judge", "reranker"): the
// role's own values, else llm's.
func (c *config) endpoint(role string) endpoint {
	pick := func(field string) string {
		if v := c.get(role + "." + field); v != "" {
			return v
		}
		return c.get("llm." + field)
	}
	ep := endpoint{baseURL: pick("base_url"), model: pick("model"), apiKey: pick("api_key")}
	if d, _ := c.duration(role + ".timeout"); d > 0 {
		ep.timeout = d
	} else {
		ep.timeout, _ = c.duration("llm.timeout")
	}
	return ep
}

func (ep endpoint) client() (*llm.Client, error) {
	opts := []llm.Option{llm.WithModel(ep.model), llm.WithAPIKey(ep.apiKey), llm.WithTimeout(ep.timeout)}
	if ep.baseURL != "" {
		opts = append(opts, llm.WithBaseURL(ep.baseURL))
	}
	return llm.New(opts...)
}

// probe checks that an LLM endpoint answers: GET base/models, which every
// OpenAI-compatible server serves (a 404 still proves it is there). A
// refused key is an error even with fallback: it is a mistake, not an
// outage.
func (ep endpoint) probe(ctx context.Context) (unreachable, err error) {
	base := ep.baseURL
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	ctx, cancel := context.WithTimeout(ctx, min(ep.timeout, 10*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
	if err != nil {
		return nil, configErr("LLM base URL %q: %v", base, err)
	}
	if ep.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("LLM endpoint %s unreachable: %v", base, err), nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, configErr("LLM endpoint %s refused the API key (%d): check %s", base, resp.StatusCode, llm.EnvAPIKey)
	case resp.StatusCode >= 500:
		return fmt.Errorf("LLM endpoint %s answered %d", base, resp.StatusCode), nil
	}
	return nil, nil
}

// engineOptions adds the configured back ends, predicates and store
// options to o. Remote back ends are probed: an unreachable one fails
// the command, unless fallback is set, when it is a warning on stderr
// and its offline default is used.
func (a *app) engineOptions(ctx context.Context, o memor.Options) (memor.Options, error) {
	c, err := a.loadConfig()
	if err != nil {
		return o, err
	}
	fallback, _ := c.boolean("fallback")
	down := func(what, instead string, cause error) error {
		if !fallback {
			return configErr("%v; start it, fix the %s configuration (see 'memor config'), or pass --fallback to use %s", cause, what, instead)
		}
		fmt.Fprintf(a.io.Err, "memor: warning: %v; using %s\n", cause, instead)
		return nil
	}
	probed := map[endpoint]error{}
	check := func(ep endpoint) (error, error) {
		if u, ok := probed[ep]; ok {
			return u, nil
		}
		u, err := ep.probe(ctx)
		if err != nil {
			return nil, err
		}
		probed[ep] = u
		return u, nil
	}
	if c.extractor() == "llm" {
		ep := c.endpoint("llm")
		u, err := check(ep)
		if err != nil {
			return o, err
		}
		if u != nil {
			if err := down("llm", "the rules extractor", u); err != nil {
				return o, err
			}
		} else {
			cl, err := ep.client()
			if err != nil {
				return o, configErr("%v", err)
			}
			o.Extractor = llm.NewExtractor(cl)
		}
	}
	for _, role := range []string{"judge", "reranker"} {
		if c.kind(role) != "llm" {
			continue
		}
		ep := c.endpoint(role)
		u, err := check(ep)
		if err != nil {
			return o, err
		}
		if u != nil {
			if err := down(role, "no "+role, u); err != nil {
				return o, err
			}
			continue
		}
		cl, err := ep.client()
		if err != nil {
			return o, configErr("%v", err)
		}
		if role == "judge" {
			o.Judge = llm.NewJudge(cl)
		} else {
			o.Reranker = llm.NewReranker(cl)
		}
	}
	if c.embedderKind() == "http" {
		dim, _ := strconv.Atoi(c.get("embedder.dim"))
		timeout, _ := c.duration("embedder.timeout")
		h, err := remote.New(remote.Options{BaseURL: c.get("embedder.base_url"), Model: c.get("embedder.model"),
			APIKey: c.get("embedder.api_key"), Dim: dim, Timeout: timeout, MaxRetries: -1})
		if err != nil {
			return o, configErr("%v", err)
		}
		// One text embedded: the endpoint answers, and the store's record
		// of its embedder gets the dimension.
		if _, err := h.Embed(ctx, []string{"memor"}); err != nil {
			var se *remote.StatusError
			if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
				return o, configErr("embeddings endpoint %s refused the API key (%d): check %s", c.get("embedder.base_url"), se.Code, remote.EnvAPIKey)
			}
			if errors.Is(err, embed.ErrDimension) {
				return o, configErr("embeddings endpoint %s: %v", c.get("embedder.base_url"), err)
			}
			if err := down("embedder", "the hash embedder", fmt.Errorf("embeddings endpoint %s unreachable: %v", c.get("embedder.base_url"), err)); err != nil {
				return o, err
			}
		} else {
			h, _ = remote.New(remote.Options{BaseURL: c.get("embedder.base_url"), Model: c.get("embedder.model"),
				APIKey: c.get("embedder.api_key"), Dim: h.Dim(), Timeout: timeout})
			o.Embedder = h
		}
	}
	o.Predicates = append(o.Predicates, c.predicates...)
	if c.get("store.durability") == "nosync" {
		o.NoSync = true
	}
	o.IndexCacheBytes, _ = c.size("store.index_cache")
	o.CacheSize, _ = c.size("store.block_cache")
	if err := c.encryption(&o); err != nil {
		return o, err
	}
	return o, nil
}

// encryption sets o.Encryption from the KEK files, if any.
func (c *config) encryption(o *memor.Options) error {
	kf, pf := c.get("store.kek_file"), c.get("store.previous_kek_file")
	if kf == "" {
		if pf != "" {
			return configErr("store.previous_kek_file is set without store.kek_file")
		}
		return nil
	}
	kek, err := readKEK(kf)
	if err != nil {
		return err
	}
	o.Encryption = &memor.Encryption{KEK: kek}
	if pf != "" {
		if o.Encryption.PreviousKEK, err = readKEK(pf); err != nil {
			return err
		}
	}
	return nil
}

// readKEK reads a key-encryption key: 64 hex digits, surrounding space
// ignored (memor kek new writes one).
func readKEK(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, configErr("KEK file: %v", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != 32 {
		return nil, configErr("KEK file %s: want 64 hex digits (32 bytes)", path)
	}
	return k, nil
}

func (a *app) configCmd() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration, where each value came from, secrets masked",
		Long: `Print the effective configuration: every setting, its value (secrets masked)
and where it came from (flag, env, file or default). Precedence: flag, then
environment variable, then config file, then default. With --check, the
configured back ends are also contacted, as every command that opens the
store does.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.loadConfig()
			if err != nil {
				return err
			}
			if check {
				if _, err := a.engineOptions(cmd.Context(), memor.Options{}); err != nil {
					return err
				}
			}
			return a.printConfig(c)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "also contact the configured LLM and embedding endpoints")
	return cmd
}

func (a *app) printConfig(c *config) error {
	type row struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Source string `json:"source"`
		Env    string `json:"env,omitempty"`
		Flag   string `json:"flag,omitempty"`
	}
	var rows []row
	for _, s := range settings {
		v := c.vals[s.key]
		val := v.val
		if s.secret && val != "" {
			val = "********"
		}
		if s.key == "db" && val == "" {
			val, _ = DefaultDB(a.io.Getenv)
		}
		f := ""
		if s.flag != "" {
			f = "--" + s.flag
		}
		rows = append(rows, row{s.key, val, v.source, s.env, f})
	}
	effective := map[string]string{"extractor": c.extractor(), "judge": c.kind("judge"),
		"reranker": c.kind("reranker"), "embedder": c.embedderKind()}
	if a.json {
		return a.printJSON(map[string]any{"file": c.file, "settings": rows, "predicates": c.predConfs, "effective": effective})
	}
	file := c.file
	if file == "" {
		file = "none"
	}
	fmt.Fprintf(a.io.Out, "config file: %s\n", file)
	keys := make([]string, 0, len(effective))
	for k := range effective {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var eff []string
	for _, k := range keys {
		eff = append(eff, k+"="+effective[k])
	}
	fmt.Fprintf(a.io.Out, "in use: %s\n", strings.Join(eff, " "))
	tw := tabwriter.NewWriter(a.io.Out, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		val := r.Value
		if val == "" {
			val = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t(%s)\n", r.Key, val, r.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range c.predConfs {
		b, _ := json.Marshal(p)
		fmt.Fprintf(a.io.Out, "predicate %s (file %s)\n", b, c.file)
	}
	return nil
}

func (a *app) reembedCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reembed",
		Short: "Re-embed every stored fact and episode with the configured embedder",
		Long: `Re-embed every stored fact version and text episode with the configured
embedder (nothing is extracted again), then record it as the store's embedder,
so that the store opens with it. A store refuses to open with another embedder
than the one that built its vectors; this moves it. Killed part way, run it
again: it resumes after the users already moved.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := a.dbPath()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("store %s: %w", dir, err)
			}
			o, err := a.engineOptions(cmd.Context(), memor.Options{})
			if err != nil {
				return err
			}
			bar := a.progressIn("reembed", "users")
			err = memor.Reembed(cmd.Context(), dir, o, func(user string, done, total int) {
				bar.set(user, done, total)
			})
			bar.finish()
			if err != nil {
				return err
			}
			emb := o.Embedder
			if emb == nil {
				emb = embed.NewHash(0)
			}
			fmt.Fprintf(a.io.Out, "reembedded with %s\n", embed.FingerprintOf(emb))
			return nil
		},
	}
}
