package memor

// This file is the one description of the root's keys and records, byte
// by byte (kv/doc.go describes the tags and the component encoding the
// keys are built from; index/bm25, index/hnsw, index/temporal and graph
// each document the keys under their own sub-tag in their doc.go). Every
// other comment that mentions a key or a record points here. All of it is
// part of the file format: a change to a key or to a record's bytes is a
// format version bump (kv.FormatVersion, with its history in kv/db.go) and
// a new golden file (layout_test.go, testdata/format).
//
// # Notation
//
//	esc(s)     s with every 0x00 written 0x00 0xFF, then 0x00 0x01
//	           (kv.AppendString): order-preserving and prefix-free
//	u64:8      8 bytes big-endian (kv.AppendUint64); u32:4 likewise
//	i64:8      8 bytes big-endian with the sign bit flipped, so that
//	           byte order is numeric order (kv.AppendInt64); an instant is
//	           its Unix nanoseconds, 1678-01-01 ≤ t < 2262-01-01
//	id:16      a fact or claim ID: the first 16 bytes of a SHA-256
//	           (factID, endID in store.go); hex in the API
//	uv, v      a uvarint, a zig-zag varint (encoding/binary)
//	str        uv length, then the bytes
//	time       v: 0 is the zero time (open, unset); an instant t ≥ 0 ns is
//	           written t+1 and one before the epoch as itself, so that
//	           1970-01-01T00:00:00Z is not read back as zero
//	f64        8 bytes little-endian IEEE 754
//	xid        1 id:16 for an engine ID (32 hex digits); 0 str for any
//	           other string (never written by the engine)
//
// # Encrypted stores
//
// Everything below is the plaintext. A store opened with Options.Encryption
// (format 8) holds the same keys and records, in files that Pebble writes
// through kv's encrypting file system (kv/crypt.go): each file is a
// 128-byte header ("memorenc", version 1, the KEK's ID, a nonce and the
// file's AES-256 key and CTR IV sealed under the KEK with AES-256-GCM),
// then Pebble's bytes in AES-256-CTR under the file's key. MEMOR_FORMAT
// alone is plain, with a second line "encrypted". No key or record
// differs, so no key component needs a keyed form: erasure is the
// deletion of the files (and with them their keys) that held a user, and
// the KEK rotation after it (README, "Encryption and erasure").
//
// # Store-wide keys
//
//	'M' "format"           → u32:4 format version (kv/db.go; also the
//	                         MEMOR_FORMAT file beside Pebble's)
//	'M' "upgrade"          → u32:4 the format an unfinished upgrade began
//	                         from (kv.DB.UpgradedFrom)
//	'M' "manifest"         → 0x01 while the MANIFEST may still name erased
//	                         keys (kv.DB.Scrub)
//	'M' "scrub"            → one byte, rewritten to rotate the WAL (Scrub)
//	'M' "txn"              → u64:8 the latest transaction time of users
//	                         since forgotten: the clock floor (ingest.go)
//	'M' "forget" rand:8    → empty: a Forget (or judge upgrade) whose
//	                         compaction has not finished (admin.go)
//	'M' "embedder"         → JSON embed.Fingerprint of the stored vectors
//	'M' "reembed"          → JSON embed.Fingerprint a Reembed moves to
//	'M' "reembed/" user    → empty: user's vectors are the target's (the
//	                         user raw, not escaped: the keys are only
//	                         ever deleted as a range)
//	'M' "warm"             → 0x01, then per user uvarint(len) user (raw)
//	                         uvarint(estimated index bytes): the users
//	                         whose indexes were cached at the last Close
//	                         that changed the list, most recently used
//	                         first, which Open warms (warm.go); Forget
//	                         rewrites it without its user
//	'U' esc(user)          → formats 1–2: the user registry (Forget still
//	                         deletes it)
//	'J' esc(predicate)     → formats 1–4: a judge verdict shared by every
//	                         user; moved under 'u' user 'j' at Open
//
// # A user's keys
//
// Every key of a user starts with 'u' esc(user) and a sub-tag (kv.Sub).
// The suffixes below follow that prefix. Where a key names a slot:
//
//	slot  = esc(subject key) esc(predicate) esc(context key) [esc(object key)]
//
// with the keys normalised (internal/norm), the predicate canonical, and
// the object present for a Many predicate only (each value of a Many
// predicate is its own slot; an end without object lives in the sub-slot
// with the empty object). A slot's claims and versions are contiguous and
// sorted by valid time.
//
//	sub suffix                     value                 written by
//	'm' —                          userMeta (JSON)       txn.commit; bulkWrite
//	'e' seq:u64                    episode record        txn.appendEpisode, importOnce; bulkWrite
//	'k' esc(key)                   seq:u64               txn.putEpisode, catchUpOnce (putIdem)
//	's' seq:u64                    epState (JSON)        txn.fail
//	'c' slot vf:i64 id:16          claim record          txn.applyOps; resolveSub (rule), applyCorrection, applyAcceptance; bulkLoad.resolve
//	'i' id:16                      slot vf:i64 id:16     txn.applyOps; bulkLoad.claims
//	'v' slot vf:i64 id:16          fact record           txn.put; resolveSub (reinforcement); bulkLoad.put
//	'h' slot vf:i64 id:16 rec:i64  fact record           txn.expire
//	'a' slot vf:i64 id:16 rec:i64  fact record           Prune (moved from 'h', bytes unchanged)
//	'd' doc:u32                    document map value    txn.setDoc (from put, indexEpisode); bulkLoad.put
//	'r' seq:u64                    decision record       txn.writeDecision; bulkLoad.load
//	'j' esc(predicate)             verdict:1             txn.cardinality; bulkLoad.cardinality
//	'b' …                          index/bm25 (doc.go)   the index sink; bulkIndex
//	'n' …                          index/hnsw (doc.go)   the index sink; bulkIndex
//	't' …                          index/temporal        the index sink; bulkIndex
//	'g' …                          graph (doc.go)        the index sink; bulkIndex
//	'p' 0x00                       image head            writeImage
//	'p' 0x01 sub:1 chunk:u32       image chunk           writeImage
//	'x'                            reserved, never written
//
// bulkWrite, bulkLoad and bulkIndex (bulk.go) are the bulk loader, which
// builds a new user's large first write apart from the online
// transaction, with the same bytes (see Options.BulkMinFacts); a text
// episode's document map value and postings are bulkLoad.episodeDoc's.
//
// vf is the claim's ValidFrom and rec a version's RecordedAt, both as
// nanoseconds (0 ns is the epoch, an instant like any other). id is the
// claim's: an assertion's fact ID (factID) or an end's endID. The live key
// ('v') has no rec: a fact has at most one live version, and reinforcing
// it rewrites that value in place (Reinforced, LastSeen, Confidence,
// Episodes; never its four instants). Expiring it deletes the 'v' key and
// writes the version, with ExpiredAt set, under 'h' with its rec.
//
// 'i' (the fact index) maps a claim's ID to its 'c' suffix, for ends as
// for assertions; Correct, Accept and Check read it.
//
// 's' holds failures only: the key exists while episode seq stands failed
// (its error and when, JSON {"error":…,"failed_at":ns}) and is deleted when
// Retry applies it. Applied-ness is userMeta.Applied, not a key.
//
// 'm' is JSON {"seq":…,"applied":…,"doc":…,"log":…,"txn":…}: the last
// episode sequence number, the last one applied, the last document ID, the
// last decision sequence number and the user's last transaction time.
//
// 'j' holds extract.Verdict as one byte: 1 replace (One), 2 append (Many).
//
// 'k' names, for each idempotency key (IdempotencyKey) of the user's
// episodes, the episode added under it: written with the episode, in the
// same batch, so that the repeat of an Add finds it before the episode is
// applied. Like 'e', Rebuild keeps it.
//
// 'p' is the user's index image (image.go): what is under 'd' 'b' 'n'
// 't' 'g' (kv.ImagedSubs), which a load reads instead of it, each as its
// index's own image built from its records, cut into chunks of 256 KB:
// the document map's (docimage.go: its arena as a userIndex holds it),
// BM25's (index/bm25/image.go: documents' lengths, dictionary, postings
// by term), the vectors' (index/hnsw/image.go), the intervals'
// (index/temporal/image.go) and the graph's (graph/image.go); a user
// without a vector index has no 'n' chunk. The chunks of a sub are
// numbered from 0. The head is imageVersion (7) then, for each imaged sub
// in kv.ImagedSubs order, uvarint(chunks) uvarint(bytes). Every write
// under an imaged sub deletes the head in its batch (kv.Batch), so a head
// present means the chunks were built from the records as they are;
// chunks without a head are left over, and replaced when an image is next
// written. A head of 0x00 then u64(n) is a claim, not an image: the
// writer building the image from a snapshot commits it only if its claim
// is still the head (no write came between); a load finds no image there.
//
// Everything under 'c' 'i' 'v' 'h' 'a' 'd' 'r' 's' 'b' 'n' 't' 'g' 'p' is
// derived from 'e' and 'j' (derivedSubs in admin.go): Rebuild deletes it
// and replays the episodes.
//
// # Records
//
// A record's first byte is its marker: 0x02 (recBinary), or 0x03
// (recExtended) for a fact or decision carrying the fields added since;
// '{' is a format-1 JSON record, read and never written. The fields follow
// in this order; a decoder refuses trailing bytes (ErrCorrupt).
//
// Episode ('e'; appendEpisode):
//
//	0x02  Seq:uv  Kind:1 (1 text, 2 facts, 3 correction, 4 accept)  At:time
//	RecordedAt:time  Text:str  nops:uv
//	nops × { Kind:1 (1 assert, 2 end)  flags:1 (1 additive)  Subject:str
//	         Predicate:str  Object:str  Context:str  ValidFrom:time
//	         Confidence:f64  Quote:str }
//	trailer:1 (1 a correction follows, 2 a speaker follows, 4 an
//	           acceptance follows, 8 an idempotency key follows)
//	[correction: FactID:xid  nclaims:uv  nclaims × xid]
//	[acceptance: FactID:xid]
//	[speaker: Speaker:str, never empty]
//	[key: Key:str, never empty]
//
// A facts episode (Assert, AssertBatch, End) holds its ops; a text
// episode is written with none: every replay extracts its claims again,
// which is why Rebuild is byte-identical only with the same extractor.
// Records written before speakers (format < 6) have trailer 0 or 1; before
// acceptances (format < 7) no trailer has flag 4; before idempotency
// keys (format < 9), none has flag 8.
//
// Claim ('c'; appendClaim):
//
//	0x02  ID:xid  Kind:1  flags:1 (1 retracted, 2 confidence is 1,
//	                               4 accepted)
//	Subject:str  Predicate:str  Object:str  Context:str  ValidFrom:v (ns)
//	[Confidence:f64, absent when flag 2]  Quote:str  Episode:uv
//	Recorded:v (ns)  Rule:str (the arrival rule: late, coexist, judge, or "")
//	[Accepted:uv ≥ 1, flag 4 only: the seq of the accept episode that chose
//	 it; the latest acceptance wins a same-instant tie]
//
// Fact version ('v', 'h', 'a'; appendFact):
//
//	0x02|0x03  ID:xid  Subject:str  Predicate:str  Object:str  Context:str
//	ValidFrom:time  ValidTo:time  RecordedAt:time  ExpiredAt:time
//	Status:1 (1 active, 2 contested, 3 retracted)  Confidence:f64
//	Reinforced:uv  LastSeen:time  Episode:uv  Quote:str  Rule:str  Doc:uv
//	[0x03 only: nepisodes:uv ≥ 1  nepisodes × uv]
//
// A version supported by its first episode alone is written 0x02 and
// decodes with Episodes = [Episode].
//
// Decision ('r'; appendDecision):
//
//	0x02|0x03  Seq:uv  Rule:str  FactID:xid  Subject:str  Predicate:str
//	Object:str  Context:str  Episode:uv  RecordedAt:time  Detail:str
//	[0x03 only: Reason:1  flags:1 (1 reinforces, 2 closed)
//	            [Reinforces:xid]  [nclosed:uv ≥ 1  nclosed × xid]]
//
// Document map value ('d'; versionDoc, appendEpisodeDoc in indexes.go):
// the first byte says what index document doc names.
//
//	'v' episode:u64 slot vf:i64 id:16 rec:i64
//	    a fact version: its first episode, and its 'v' suffix plus rec, so
//	    that the version is the live one if its RecordedAt is rec, else
//	    the 'h' (or 'a') key with that suffix
//	'e' seq:u64 flags:1 [at:i64 rec:i64] [speaker:str] [n × id:16]
//	    an episode's text: flags 1 it has claims, 2 it says more than its
//	    claims, 4 the IDs that follow (the facts it stands on) are known,
//	    8 the episode's At and RecordedAt follow (from format 12; a load
//	    reads the episode for a value without them), 16 its Speaker
//	    follows them, empty for the user's own turn (from format 15; a
//	    query reads the episode of a value without it to rank it); a
//	    value written before stands were recorded has flags 0 or 1
//
// Document IDs count up per user from 1 (userMeta.Doc); the index packages
// know documents only by these numbers.
