#!/usr/bin/env python3
"""Writes the generated texts of the corpus (the others are written by hand).

Deterministic: running it again writes the same bytes. Run from this folder.
"""
import base64, hashlib, random

r = random.Random(20261201)

# A document near the 64 KiB text limit: sections of a handbook whose
# sentences are drawn from hand-written fragments.
subjects = ["The on-call engineer", "Every new hire", "The release manager", "Our storage layer",
            "The billing service", "A customer's export", "The nightly job", "Each team lead",
            "The incident commander", "The data retention policy", "Our search index", "The mobile client"]
verbs = ["must confirm", "should review", "is responsible for", "keeps a record of", "never deletes",
         "rotates", "documents", "escalates", "measures", "archives", "backs up", "reconciles"]
objects = ["the weekly capacity report", "every schema migration", "the audit log before Friday",
           "customer data older than 18 months", "the TLS certificates on the edge proxies",
           "the dashboards for p99 latency", "a runbook for each alert", "the access reviews each quarter",
           "the cost of every new dependency", "the failover drill results", "the retention exceptions",
           "the list of sub-processors"]
tails = ["", " within two business days", " unless the security team objects", " (see appendix C)",
         " and posts a summary in #ops", ", as agreed in the 2025 review", " before the change freeze",
         " — no exceptions", " even when the pager is quiet", " with a second reviewer"]
parts = ["# Platform handbook (generated test document)\n"]
size = len(parts[0])
sec = 0
while True:
    sec += 1
    head = f"\n## {sec}. Section {sec}: {r.choice(objects).capitalize()}\n\n"
    para = []
    for _ in range(r.randint(4, 9)):
        para.append(f"{r.choice(subjects)} {r.choice(verbs)} {r.choice(objects)}{r.choice(tails)}.")
    block = head + " ".join(para) + "\n"
    if size + len(block.encode()) > 60 * 1024:
        break
    parts.append(block)
    size += len(block.encode())
open("document-60k.txt", "w").write("".join(parts))

# Many distinct terms: pseudo-words from syllables, in several scripts,
# with real words between them (thousands of distinct tokens in ~30 KB).
syl = ["ka", "ren", "dor", "vi", "sul", "ma", "tek", "lo", "ur", "quin", "bra", "zel", "po", "fyn", "ash", "gor"]
cyr = ["ко", "ра", "ми", "до", "ль", "та", "зе", "ну"]
grk = ["λα", "μο", "κρ", "πη", "στ", "θε"]
words = set()
out = []
while len(words) < 3000:
    s = r.random()
    if s < 0.7:
        w = "".join(r.choice(syl) for _ in range(r.randint(2, 4)))
    elif s < 0.85:
        w = "".join(r.choice(cyr) for _ in range(r.randint(2, 3)))
    else:
        w = "".join(r.choice(grk) for _ in range(r.randint(2, 3)))
    w += str(r.randint(0, 99)) if r.random() < 0.1 else ""
    if w in words:
        continue
    words.add(w)
    out.append(w)
lines = []
for i in range(0, len(out), 12):
    lines.append("I met " + ", ".join(out[i:i+12]) + " at the conference.")
open("many-distinct-terms.txt", "w").write("\n".join(lines) + "\n")

# One long token with no spaces (a pasted key or blob) and a long URL.
blob = base64.b64encode(hashlib.sha512(b"memor").digest() * 96).decode()
url = "https://example.com/" + "/".join(hashlib.sha1(str(i).encode()).hexdigest() for i in range(60))
open("long-token.txt", "w").write("Here is my key, please keep it: " + blob + "\nand the link " + url + "\n")

# One word said thousands of times.
open("repeated-word.txt", "w").write(("buffalo " * 5000).strip() + "\n")
