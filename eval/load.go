package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrData marks a data set that cannot be read as documented.
var ErrData = errors.New("eval: bad data set")

// Message is one turn of a conversation.
type Message struct {
	ID   string
	Role string
	Text string
	At   time.Time
}

// Question is one probing question with the IDs of its evidence messages.
type Question struct {
	ID       string
	Type     string
	Text     string
	Evidence []string
	// Original and Updated are a knowledge update's stale and newer
	// evidence, when the data give them.
	Original, Updated []string
}

// Conversation is one conversation and its questions.
type Conversation struct {
	Name      string
	Messages  []Message
	Questions []Question
}

// Load reads a BEAM directory or a JSON Lines file.
func Load(path string) ([]Conversation, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return LoadBEAM(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadJSONL(f)
}

var marker = regexp.MustCompile(`\s*->->[ \t]*[0-9A-Za-z/]+(?:[ \t]*,[ \t]*[0-9A-Za-z/]+)+\)?\s*$`)

// StripMarker removes BEAM's trailing "->-> batch,bullet" marker.
func StripMarker(s string) string { return marker.ReplaceAllString(s, "") }

type beamMsg struct {
	Role       string `json:"role"`
	ID         int    `json:"id"`
	Content    string `json:"content"`
	TimeAnchor string `json:"time_anchor"`
}

// LoadBEAM reads every numbered conversation folder of dir, in numeric order.
func LoadBEAM(dir string) ([]Conversation, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	if len(nums) == 0 {
		return nil, fmt.Errorf("%w: %s has no numbered conversation folders", ErrData, dir)
	}
	var out []Conversation
	for _, n := range nums {
		c, err := loadBEAMOne(filepath.Join(dir, strconv.Itoa(n)), strconv.Itoa(n))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func loadBEAMOne(dir, name string) (Conversation, error) {
	c := Conversation{Name: name}
	b, err := os.ReadFile(filepath.Join(dir, "chat.json"))
	if err != nil {
		return c, err
	}
	var batches []struct {
		Turns [][]beamMsg `json:"turns"`
	}
	if err := json.Unmarshal(b, &batches); err != nil {
		return c, fmt.Errorf("%w: %s/chat.json: %v", ErrData, dir, err)
	}
	var anchor time.Time
	since := 0
	for _, bt := range batches {
		for _, turn := range bt.Turns {
			for _, m := range turn {
				if m.TimeAnchor != "" {
					t, err := time.Parse("January-02-2006", m.TimeAnchor)
					if err != nil {
						return c, fmt.Errorf("%w: %s message %d: time_anchor %q", ErrData, dir, m.ID, m.TimeAnchor)
					}
					anchor, since = t, 0
				}
				if anchor.IsZero() {
					return c, fmt.Errorf("%w: %s message %d precedes every time_anchor", ErrData, dir, m.ID)
				}
				c.Messages = append(c.Messages, Message{ID: strconv.Itoa(m.ID), Role: m.Role,
					Text: StripMarker(m.Content), At: anchor.Add(time.Duration(since) * time.Minute)})
				since++
			}
		}
	}
	b, err = os.ReadFile(filepath.Join(dir, "probing_questions.json"))
	if err != nil {
		return c, err
	}
	var qs map[string][]struct {
		Question string          `json:"question"`
		Source   json.RawMessage `json:"source_chat_ids"`
	}
	if err := json.Unmarshal(b, &qs); err != nil {
		return c, fmt.Errorf("%w: %s/probing_questions.json: %v", ErrData, dir, err)
	}
	types := make([]string, 0, len(qs))
	for t := range qs {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, typ := range types {
		for i, q := range qs[typ] {
			qq := Question{ID: fmt.Sprintf("%s#%d", typ, i+1), Type: typ, Text: q.Question}
			if len(q.Source) > 0 && string(q.Source) != "null" {
				var v any
				if err := json.Unmarshal(q.Source, &v); err != nil {
					return c, fmt.Errorf("%w: %s %s: %v", ErrData, dir, qq.ID, err)
				}
				if obj, ok := v.(map[string]any); ok {
					keys := make([]string, 0, len(obj))
					for k := range obj {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						ids := flatten(obj[k])
						qq.Evidence = append(qq.Evidence, ids...)
						switch k {
						case "original_info":
							qq.Original = ids
						case "updated_info":
							qq.Updated = ids
						}
					}
				} else {
					qq.Evidence = flatten(v)
				}
			}
			c.Questions = append(c.Questions, qq)
		}
	}
	return c, check(&c)
}

func flatten(v any) []string {
	switch x := v.(type) {
	case float64:
		return []string{strconv.FormatFloat(x, 'f', -1, 64)}
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return nil
}

// check dedupes evidence and refuses evidence naming no message.
func check(c *Conversation) error {
	ids := map[string]bool{}
	for _, m := range c.Messages {
		if ids[m.ID] {
			return fmt.Errorf("%w: conversation %s: message ID %q twice", ErrData, c.Name, m.ID)
		}
		ids[m.ID] = true
	}
	for i := range c.Questions {
		q := &c.Questions[i]
		q.Evidence = dedupe(q.Evidence)
		for _, id := range q.Evidence {
			if !ids[id] {
				return fmt.Errorf("%w: conversation %s question %s: evidence %q is no message", ErrData, c.Name, q.ID, id)
			}
		}
	}
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

type jsonLine struct {
	Conversation string   `json:"conversation"`
	ID           string   `json:"id"`
	Role         string   `json:"role"`
	At           string   `json:"at"`
	Text         *string  `json:"text"`
	Question     *string  `json:"question"`
	Type         string   `json:"type"`
	Evidence     []string `json:"evidence"`
	Original     []string `json:"original"`
	Updated      []string `json:"updated"`
}

// LoadJSONL reads the JSON Lines format of the package doc.
func LoadJSONL(r io.Reader) ([]Conversation, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var out []Conversation
	idx := map[string]int{}
	type state struct {
		at    time.Time
		since int
	}
	st := map[string]*state{}
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var l jsonLine
		d := json.NewDecoder(strings.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&l); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrData, n, err)
		}
		if l.Conversation == "" {
			return nil, fmt.Errorf("%w: line %d: no conversation", ErrData, n)
		}
		i, ok := idx[l.Conversation]
		if !ok {
			i = len(out)
			idx[l.Conversation] = i
			out = append(out, Conversation{Name: l.Conversation})
			st[l.Conversation] = &state{}
		}
		c := &out[i]
		switch {
		case (l.Text == nil) == (l.Question == nil):
			return nil, fmt.Errorf("%w: line %d: want exactly one of \"text\" (a message) or \"question\"", ErrData, n)
		case l.Text != nil:
			if l.ID == "" {
				return nil, fmt.Errorf("%w: line %d: message without id", ErrData, n)
			}
			s := st[l.Conversation]
			if l.At != "" {
				t, err := parseAt(l.At)
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: at %q: want RFC 3339 or YYYY-MM-DD", ErrData, n, l.At)
				}
				s.at, s.since = t, 0
			}
			if s.at.IsZero() {
				return nil, fmt.Errorf("%w: line %d: the first message of conversation %q needs \"at\"", ErrData, n, l.Conversation)
			}
			c.Messages = append(c.Messages, Message{ID: l.ID, Role: l.Role, Text: *l.Text,
				At: s.at.Add(time.Duration(s.since) * time.Minute)})
			s.since++
		default:
			ev := l.Evidence
			if len(ev) == 0 {
				ev = append(slices.Clone(l.Original), l.Updated...)
			}
			c.Questions = append(c.Questions, Question{ID: fmt.Sprintf("line%d", n), Type: l.Type,
				Text: *l.Question, Evidence: ev, Original: l.Original, Updated: l.Updated})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrData, n+1, err)
	}
	for i := range out {
		if err := check(&out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02", s)
}

// Select keeps the named conversations (all when names is empty), then the
// first limit of them (all when limit <= 0).
func Select(cs []Conversation, names []string, limit int) ([]Conversation, error) {
	out := cs
	if len(names) > 0 {
		out = nil
		for _, n := range names {
			i := slices.IndexFunc(cs, func(c Conversation) bool { return c.Name == n })
			if i < 0 {
				return nil, fmt.Errorf("%w: no conversation %q", ErrData, n)
			}
			out = append(out, cs[i])
		}
	}
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	return out, nil
}
