package memoreino

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudwego/eino/schema"

	"github.com/memor-db/memor"
)

// Metadata keys of the documents the retriever returns and the indexer
// reads.
const (
	MetaKind       = "kind" // KindFact or KindEpisode
	MetaSubject    = "subject"
	MetaPredicate  = "predicate"
	MetaObject     = "object"
	MetaContext    = "context"
	MetaValidFrom  = "valid_from" // time.Time, or an RFC 3339 or 2006-01-02 string when indexed
	MetaValidTo    = "valid_to"   // absent while the fact is still true
	MetaRecordedAt = "recorded_at"
	MetaConfidence = "confidence" // float64 in (0, 1]; indexer only: 1 when absent
	MetaRule       = "rule"
	MetaPath       = "path"
	MetaAt         = "at" // when an episode was said: time.Time or a string, like MetaValidFrom
	MetaEpisode    = "episode"
	MetaSpeaker    = "speaker"
)

// Values of MetaKind.
const (
	KindFact    = "fact"
	KindEpisode = "episode"
)

// episodeID is the document ID of an episode: its sequence number in the
// user's log, prefixed so that it never collides with a fact ID (a hex
// hash).
func episodeID(seq uint64) string { return "episode-" + strconv.FormatUint(seq, 10) }

// document renders one memor result as an Eino document.
func document(r memor.Result) *schema.Document {
	d := &schema.Document{Content: r.Text(), MetaData: map[string]any{}}
	switch {
	case r.Fact != nil:
		f := r.Fact
		d.ID = f.ID
		d.MetaData[MetaKind] = KindFact
		d.MetaData[MetaSubject] = f.Subject
		d.MetaData[MetaPredicate] = f.Predicate
		d.MetaData[MetaObject] = f.Object
		if f.Context != "" {
			d.MetaData[MetaContext] = f.Context
		}
		d.MetaData[MetaValidFrom] = f.ValidFrom
		if !f.ValidTo.IsZero() {
			d.MetaData[MetaValidTo] = f.ValidTo
		}
		d.MetaData[MetaRecordedAt] = f.RecordedAt
		d.MetaData[MetaRule] = string(f.Rule)
		if r.Path != "" {
			d.MetaData[MetaPath] = r.Path
		}
	case r.Episode != nil:
		ep := r.Episode
		d.ID = episodeID(ep.Seq)
		d.MetaData[MetaKind] = KindEpisode
		d.MetaData[MetaAt] = ep.At
		d.MetaData[MetaEpisode] = ep.Seq
		d.MetaData[MetaRecordedAt] = ep.RecordedAt
		if ep.Speaker != "" {
			d.MetaData[MetaSpeaker] = ep.Speaker
		}
	}
	return d.WithScore(r.Score)
}

// factInput reads an assertion from a document's metadata; ok is false
// when the metadata does not name all of subject, predicate and object
// (the document is then an episode).
func factInput(d *schema.Document) (in memor.FactInput, ok bool, err error) {
	s, sok := metaString(d.MetaData, MetaSubject)
	p, pok := metaString(d.MetaData, MetaPredicate)
	o, ook := metaString(d.MetaData, MetaObject)
	if !sok || !pok || !ook {
		return in, false, nil
	}
	in = memor.FactInput{Subject: s, Predicate: p, Object: o, Quote: d.Content}
	in.Context, _ = metaString(d.MetaData, MetaContext)
	if in.ValidFrom, err = metaTime(d.MetaData, MetaValidFrom); err != nil {
		return in, true, err
	}
	switch c := d.MetaData[MetaConfidence].(type) {
	case nil:
	case float64:
		in.Confidence = c
	case float32:
		in.Confidence = float64(c)
	default:
		return in, true, fmt.Errorf("%w: %q is a %T, want a float64", ErrMetadata, MetaConfidence, c)
	}
	return in, true, nil
}

func metaString(m map[string]any, key string) (string, bool) {
	s, ok := m[key].(string)
	return s, ok && strings.TrimSpace(s) != ""
}

// metaTime reads an instant from metadata: a time.Time as the retriever
// returns it, or a string as JSON-borne metadata carries it. Absent is the
// zero time (memor's "now").
func metaTime(m map[string]any, key string) (time.Time, error) {
	switch v := m[key].(type) {
	case nil:
		return time.Time{}, nil
	case time.Time:
		return v, nil
	case string:
		for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
			if t, err := time.Parse(layout, v); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("%w: %q: %q is neither RFC 3339 nor 2006-01-02", ErrMetadata, key, v)
	default:
		return time.Time{}, fmt.Errorf("%w: %q is a %T, want a time.Time or a string", ErrMetadata, key, v)
	}
}
