package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/index/bm25"
)

// Methods are the columns of a report, in order.
var Methods = []string{"memor", "memor-bm25", "memor-vector", "memor-graph", "bm25", "recent"}

// Ks are the cut-offs recall is reported at.
var Ks = []int{5, 10, 20}

const depth = 20 // results asked of every method (the largest of Ks)

// Options configures Run.
type Options struct {
	// TempDir holds the temporary stores ("" = os.TempDir()).
	TempDir string
	// Progress, if set, is told when each conversation is done.
	Progress func(conversation string, done, total int)
	// MinSupport is passed to memor's Query (QueryOptions.MinSupport; 0:
	// memor's default, negative: no abstention). The signal-alone methods
	// never abstain.
	MinSupport float64
}

// Recall is recall at 5, 10 and 20 averaged over N questions.
type Recall struct {
	N   int     `json:"n"`
	R5  float64 `json:"r5"`
	R10 float64 `json:"r10"`
	R20 float64 `json:"r20"`
}

// Above counts knowledge updates ranked above their original.
type Above struct {
	Above int     `json:"above"`
	N     int     `json:"n"`
	Rate  float64 `json:"rate"`
}

// QuestionResult is one question's recall per method.
type QuestionResult struct {
	Conversation string                `json:"conversation"`
	ID           string                `json:"id"`
	Type         string                `json:"type"`
	Recall       map[string][3]float64 `json:"recall"`
	// UpdateAbove, for a knowledge update, says per method whether the
	// newer message ranks above the original one in the top 20.
	UpdateAbove map[string]bool `json:"update_above,omitempty"`
}

// Report is the outcome of Run.
type Report struct {
	Conversations int `json:"conversations"`
	Messages      int `json:"messages"`
	// Refused counts messages Add refused (ErrTooLarge); Failed the
	// episodes whose application failed.
	Refused int `json:"refused"`
	Failed  int `json:"failed"`
	// Questions counts questions with evidence (scored); NoEvidence the rest.
	Questions  int                          `json:"questions"`
	NoEvidence int                          `json:"no_evidence"`
	Methods    []string                     `json:"methods"`
	ByType     map[string]map[string]Recall `json:"by_type"`
	All        map[string]Recall            `json:"all"`
	// UpdateAbove is, per method, how often a knowledge update's newer
	// message ranks above the original one, over the knowledge-update
	// questions that have an order to test (see UpdatePair).
	UpdateAbove map[string]Above `json:"update_above"`
	// UpdateUnordered counts the knowledge-update questions whose
	// original and updated messages are the same (no order to test:
	// left out of UpdateAbove); UpdateUnpaired those that name no
	// original or no update.
	UpdateUnordered int `json:"update_unordered"`
	UpdateUnpaired  int `json:"update_unpaired"`
	// FactsInTop10 is the mean number of facts among memor's top 10.
	FactsInTop10 float64 `json:"facts_in_top10"`
	// NoEvidenceAnswered is the mean number of results memor returns for
	// questions without evidence (abstention).
	NoEvidenceAnswered float64 `json:"no_evidence_results"`
	// Abstained is the share of questions without evidence for which
	// memor returns nothing; FalseAbstained the share of questions with
	// evidence for which it returns nothing.
	Abstained      float64          `json:"abstained"`
	FalseAbstained float64          `json:"false_abstained"`
	PerQuestion    []QuestionResult `json:"per_question"`
	Note           string           `json:"note"`
	Seconds        float64          `json:"seconds"`
}

const user = "eval"

// addOptions are the options a message is added with: its time and, for
// a role other than the user's, the role as its speaker, so that the
// assistant's first person ("I recommend …") is not taken for the
// owner's.
func addOptions(m Message) []memor.AddOption {
	opts := []memor.AddOption{memor.At(m.At)}
	if r := strings.TrimSpace(m.Role); r != "" && r != "user" {
		opts = append(opts, memor.Speaker(r))
	}
	return opts
}

// Run builds a store per conversation and scores every method.
func Run(ctx context.Context, cs []Conversation, o Options) (*Report, error) {
	start := time.Now()
	r := &Report{Methods: Methods, ByType: map[string]map[string]Recall{}, All: map[string]Recall{},
		UpdateAbove: map[string]Above{},
		Note:        "user messages are the owner's (no Speaker); other roles are added with memor.Speaker(role)"}
	var facts, top10s, noEvRes float64
	var n abstentions
	for i, c := range cs {
		if err := runOne(ctx, c, o, r, &facts, &top10s, &noEvRes, &n); err != nil {
			return nil, fmt.Errorf("conversation %s: %w", c.Name, err)
		}
		r.Conversations++
		if o.Progress != nil {
			o.Progress(c.Name, i+1, len(cs))
		}
	}
	for _, q := range r.PerQuestion {
		for _, m := range Methods {
			add := func(x Recall) Recall {
				v := q.Recall[m]
				x.N++
				x.R5 += v[0]
				x.R10 += v[1]
				x.R20 += v[2]
				return x
			}
			if r.ByType[q.Type] == nil {
				r.ByType[q.Type] = map[string]Recall{}
			}
			r.ByType[q.Type][m] = add(r.ByType[q.Type][m])
			r.All[m] = add(r.All[m])
		}
	}
	mean := func(x Recall) Recall {
		if x.N > 0 {
			n := float64(x.N)
			x.R5, x.R10, x.R20 = x.R5/n, x.R10/n, x.R20/n
		}
		return x
	}
	for t, ms := range r.ByType {
		for m, x := range ms {
			r.ByType[t][m] = mean(x)
		}
	}
	for m, x := range r.All {
		r.All[m] = mean(x)
	}
	for m, a := range r.UpdateAbove {
		if a.N > 0 {
			a.Rate = float64(a.Above) / float64(a.N)
		}
		r.UpdateAbove[m] = a
	}
	if top10s > 0 {
		r.FactsInTop10 = facts / top10s
	}
	if r.NoEvidence > 0 {
		r.NoEvidenceAnswered = noEvRes / float64(r.NoEvidence)
		r.Abstained = float64(n.right) / float64(r.NoEvidence)
	}
	if r.Questions > 0 {
		r.FalseAbstained = float64(n.wrong) / float64(r.Questions)
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

type discard struct{}

func (discard) Set(_, _ []byte) error { return nil }
func (discard) Delete([]byte) error   { return nil }

// abstentions counts memor's empty answers: right (no evidence) and wrong.
type abstentions struct{ right, wrong int }

func runOne(ctx context.Context, c Conversation, o Options, r *Report, facts, top10s, noEvRes *float64, n *abstentions) (err error) {
	dir, err := os.MkdirTemp(o.TempDir, "memor-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := memor.Open(dir, memor.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.Close(); err == nil {
			err = cerr
		}
	}()
	bySeq := map[uint64]string{}
	bm := bm25.New([]byte("eval"), bm25.Options{})
	for i, m := range c.Messages {
		r.Messages++
		if err := bm.Add(discard{}, uint32(i), m.Text); err != nil {
			return err
		}
		if strings.TrimSpace(m.Text) == "" {
			r.Refused++
			continue
		}
		ep, err := e.Add(ctx, user, m.Text, addOptions(m)...)
		if errors.Is(err, memor.ErrTooLarge) {
			r.Refused++
			continue
		}
		if err != nil {
			return fmt.Errorf("message %s: %w", m.ID, err)
		}
		bySeq[ep.Seq] = m.ID
	}
	if err := e.Flush(ctx, user); err != nil {
		return err
	}
	fr, err := e.Freshness(ctx, user)
	if err != nil {
		return err
	}
	r.Failed += fr.Failed
	toIDs := func(rs []memor.Result, dropZero bool) []string {
		var out []string
		for _, x := range rs {
			if dropZero && x.Score == 0 {
				continue
			}
			switch {
			case x.Fact != nil:
				out = append(out, bySeq[x.Fact.Episode])
			case x.Episode != nil:
				out = append(out, bySeq[x.Episode.Seq])
			default:
				out = append(out, "")
			}
		}
		return out
	}
	weights := map[string]memor.Weights{"memor-bm25": {BM25: 1}, "memor-vector": {Vector: 1}, "memor-graph": {Entity: 1}}
	queried := map[string]memor.Weights{"memor": {}}
	for m, w := range weights {
		queried[m] = w
	}
	for _, q := range c.Questions {
		if strings.TrimSpace(q.Text) == "" {
			continue
		}
		ranked := map[string][]string{}
		// served[m][j] is what method m serves when asked for Ks[j]
		// results: Query orders within the list it serves (newestFirst),
		// so its top 10 need not be the first 10 of its top 20.
		served := map[string][][]string{}
		rs, err := e.Query(ctx, user, q.Text, memor.QueryOptions{K: depth, MinSupport: o.MinSupport})
		if err != nil {
			return fmt.Errorf("question %s: %w", q.ID, err)
		}
		if len(q.Evidence) == 0 {
			r.NoEvidence++
			*noEvRes += float64(len(rs))
			if len(rs) == 0 {
				n.right++
			}
			continue
		}
		if len(rs) == 0 {
			n.wrong++
		}
		for i, x := range rs {
			if i < 10 && x.Fact != nil {
				*facts++
			}
		}
		*top10s++
		ranked["memor"] = toIDs(rs, false)
		for m, w := range weights {
			rs, err := e.Query(ctx, user, q.Text, memor.QueryOptions{K: depth, Weights: w, MinSupport: -1})
			if err != nil {
				return fmt.Errorf("question %s: %w", q.ID, err)
			}
			ranked[m] = toIDs(rs, true)
		}
		for m, w := range queried {
			served[m] = nil
			for _, k := range Ks {
				if k == depth {
					served[m] = append(served[m], ranked[m])
					continue
				}
				minSupport := -1.0
				if m == "memor" {
					minSupport = o.MinSupport
				}
				rs, err := e.Query(ctx, user, q.Text, memor.QueryOptions{K: k, Weights: w, MinSupport: minSupport})
				if err != nil {
					return fmt.Errorf("question %s: %w", q.ID, err)
				}
				served[m] = append(served[m], toIDs(rs, m != "memor"))
			}
		}
		hits, err := bm.Search(ctx, q.Text, depth, nil)
		if err != nil {
			return err
		}
		for _, h := range hits {
			ranked["bm25"] = append(ranked["bm25"], c.Messages[h.Doc].ID)
		}
		for i := len(c.Messages) - 1; i >= 0 && len(ranked["recent"]) < depth; i-- {
			ranked["recent"] = append(ranked["recent"], c.Messages[i].ID)
		}
		qr := QuestionResult{Conversation: c.Name, ID: q.ID, Type: q.Type, Recall: map[string][3]float64{}}
		older, newer := UpdatePair(q.Original, q.Updated)
		switch {
		case q.Type != "knowledge_update":
		case len(q.Original) == 0 || len(q.Updated) == 0:
			r.UpdateUnpaired++
		case len(older) == 0 || len(newer) == 0:
			r.UpdateUnordered++
		}
		for _, m := range Methods {
			var v [3]float64
			for j, k := range Ks {
				list := ranked[m]
				if served[m] != nil {
					list = served[m][j]
				}
				v[j] = RecallAt(list, q.Evidence, k)
			}
			qr.Recall[m] = v
			if len(older) > 0 && len(newer) > 0 {
				a := r.UpdateAbove[m]
				a.N++
				above := UpdateAbove(ranked[m], older, newer)
				if above {
					a.Above++
				}
				if qr.UpdateAbove == nil {
					qr.UpdateAbove = map[string]bool{}
				}
				qr.UpdateAbove[m] = above
				r.UpdateAbove[m] = a
			}
		}
		r.Questions++
		r.PerQuestion = append(r.PerQuestion, qr)
	}
	return nil
}

// RecallAt is the fraction of the distinct evidence IDs among the first k
// entries of ranked.
func RecallAt(ranked, evidence []string, k int) float64 {
	ev := dedupe(evidence)
	if len(ev) == 0 {
		return 0
	}
	top := ranked[:min(k, len(ranked))]
	n := 0
	for _, id := range ev {
		for _, x := range top {
			if x == id {
				n++
				break
			}
		}
	}
	return float64(n) / float64(len(ev))
}

// UpdatePair returns a knowledge update's original and updated messages
// without those it names as both. A message that is both the original and
// the update cannot rank above itself: a question whose sets are the same
// (or that lacks one) has no order to test, and both results are empty.
// Counting it as a miss would charge a method for the data; counting it
// as a hit whenever the message is served would credit an order nobody
// tested. Run leaves it out of UpdateAbove and counts it apart.
func UpdatePair(original, updated []string) (older, newer []string) {
	for _, id := range dedupe(original) {
		if !slices.Contains(updated, id) {
			older = append(older, id)
		}
	}
	for _, id := range dedupe(updated) {
		if !slices.Contains(original, id) {
			newer = append(newer, id)
		}
	}
	if len(older) == 0 || len(newer) == 0 {
		return nil, nil
	}
	return older, newer
}

// UpdateAbove reports whether the best rank of an updated ID in ranked is
// better than the best rank of an original ID (absent ranks last; neither
// present is false).
func UpdateAbove(ranked, original, updated []string) bool {
	best := func(ids []string) int {
		b := math.MaxInt
		for i, x := range ranked {
			for _, id := range ids {
				if x == id && i < b {
					b = i
				}
			}
		}
		return b
	}
	u := best(updated)
	return u != math.MaxInt && u < best(original)
}

// WriteTable prints recall@10, @5 and @20 tables (question types × methods)
// and the knowledge-update line.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d conversations, %d messages (%d refused by Add, %d failed to apply), %d questions with evidence, %d without; %.0f s\n",
		r.Conversations, r.Messages, r.Refused, r.Failed, r.Questions, r.NoEvidence, r.Seconds)
	fmt.Fprintf(w, "note: %s\n", r.Note)
	types := make([]string, 0, len(r.ByType))
	for t := range r.ByType {
		types = append(types, t)
	}
	sort.Strings(types)
	for j, k := range []int{10, 5, 20} {
		get := func(x Recall) float64 { return [...]float64{x.R10, x.R5, x.R20}[j] }
		fmt.Fprintf(w, "\nrecall@%d\n", k)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "type\tn\t")
		for _, m := range r.Methods {
			fmt.Fprintf(tw, "%s\t", m)
		}
		fmt.Fprintln(tw)
		row := func(name string, ms map[string]Recall) {
			fmt.Fprintf(tw, "%s\t%d\t", name, ms[r.Methods[0]].N)
			for _, m := range r.Methods {
				fmt.Fprintf(tw, "%.3f\t", get(ms[m]))
			}
			fmt.Fprintln(tw)
		}
		for _, t := range types {
			row(t, r.ByType[t])
		}
		row("all", r.All)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprint(w, "\nknowledge update ranked above the original (top 20):")
	for _, m := range r.Methods {
		if a, ok := r.UpdateAbove[m]; ok {
			fmt.Fprintf(w, " %s %d/%d", m, a.Above, a.N)
		}
	}
	if r.UpdateUnordered > 0 || r.UpdateUnpaired > 0 {
		fmt.Fprintf(w, "\n  not counted: %d name the same message as original and update (no order to test), %d name no original or no update",
			r.UpdateUnordered, r.UpdateUnpaired)
	}
	fmt.Fprintf(w, "\nfacts among memor's top 10: %.2f on average; results memor returns for a question without evidence: %.1f on average\n",
		r.FactsInTop10, r.NoEvidenceAnswered)
	fmt.Fprintf(w, "abstention: memor returns nothing for %.1f %% of the %d questions without evidence and for %.1f %% of the %d with evidence\n",
		100*r.Abstained, r.NoEvidence, 100*r.FalseAbstained, r.Questions)
	return nil
}
