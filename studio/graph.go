package studio

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/norm"
)

// gnode is an entity (a subject or an object) of the graph.
type gnode struct {
	Key, Name string
	Depth     int
	parent    int
	x, y, ang float64
	OnPath    bool
}

// gedge is a fact between two entities.
type gedge struct {
	From, To  int
	Predicate string
	OnPath    bool
}

type graph struct {
	Nodes     []gnode
	Edges     []gedge
	Truncated bool
	// size is the side of the drawing: room for the rings it uses.
	size float64
}

// neighbourhood walks the facts from the entity named center up to depth
// hops (either direction), at most GraphNodes entities, nearest first.
func neighbourhood(facts []memor.Fact, center string, depth int) graph {
	adj := map[string][]int{}
	names := map[string]string{}
	for i, f := range facts {
		s, o := norm.Key(f.Subject), norm.Key(f.Object)
		adj[s] = append(adj[s], i)
		adj[o] = append(adj[o], i)
		names[s], names[o] = f.Subject, f.Object
	}
	var g graph
	c := norm.Key(center)
	if _, ok := names[c]; !ok {
		return g
	}
	index := map[string]int{c: 0}
	g.Nodes = append(g.Nodes, gnode{Key: c, Name: names[c], parent: -1})
	seenEdge := map[int]bool{}
	for i := 0; i < len(g.Nodes); i++ {
		n := g.Nodes[i]
		for _, fi := range adj[n.Key] {
			if seenEdge[fi] {
				continue
			}
			f := facts[fi]
			s, o := norm.Key(f.Subject), norm.Key(f.Object)
			other := o
			if other == n.Key {
				other = s
			}
			if _, ok := index[other]; !ok {
				if n.Depth == depth {
					continue
				}
				if len(g.Nodes) == GraphNodes {
					g.Truncated = true
					continue
				}
				index[other] = len(g.Nodes)
				g.Nodes = append(g.Nodes, gnode{Key: other, Name: names[other], Depth: n.Depth + 1, parent: i})
			}
			seenEdge[fi] = true
			g.Edges = append(g.Edges, gedge{From: index[s], To: index[o], Predicate: f.Predicate})
		}
	}
	return g
}

// markPath highlights the nodes and edges of a query result's graph path
// ("user → brother → Alex → has_pet → golden retriever").
func (g *graph) markPath(path string) {
	parts := strings.Split(path, " → ")
	at := func(name string) int {
		k := norm.Key(name)
		for i, n := range g.Nodes {
			if n.Key == k {
				return i
			}
		}
		return -1
	}
	for i := 0; i+2 < len(parts); i += 2 {
		a, b, pred := at(parts[i]), at(parts[i+2]), parts[i+1]
		if a < 0 || b < 0 {
			continue
		}
		for e := range g.Edges {
			ed := &g.Edges[e]
			if ed.Predicate == pred && ((ed.From == a && ed.To == b) || (ed.From == b && ed.To == a)) {
				ed.OnPath = true
				g.Nodes[a].OnPath, g.Nodes[b].OnPath = true, true
			}
		}
	}
}

// gRing is the distance between two rings; gMargin leaves room for the
// labels of the outer ring.
const (
	gRing   = 115.0
	gMargin = 110.0
)

// layout puts the center in the middle and each depth on a ring, a node
// near its parent's angle.
func (g *graph) layout() {
	byDepth := map[int][]int{}
	deepest := 0
	for i, n := range g.Nodes {
		byDepth[n.Depth] = append(byDepth[n.Depth], i)
		deepest = max(deepest, n.Depth)
	}
	c := float64(deepest)*gRing + gMargin
	g.size = 2 * c
	g.Nodes[0].x, g.Nodes[0].y = c, c
	for d := 1; d <= 3; d++ {
		ring := byDepth[d]
		slices.SortStableFunc(ring, func(a, b int) int {
			pa, pb := g.Nodes[g.Nodes[a].parent].ang, g.Nodes[g.Nodes[b].parent].ang
			switch {
			case pa < pb:
				return -1
			case pa > pb:
				return 1
			}
			return 0
		})
		for k, i := range ring {
			a := 2*math.Pi*float64(k)/float64(len(ring)) + float64(d)*0.35
			n := &g.Nodes[i]
			n.ang = a
			n.x, n.y = c+float64(d)*gRing*math.Cos(a), c+float64(d)*gRing*math.Sin(a)
		}
	}
}

func (g *graph) svg(user string, q url.Values) string {
	var w svgWriter
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" id="graph" viewBox="0 0 %.0f %.0f" role="group" aria-label="Entities and relations around %s">`, g.size, g.size, esc(g.Nodes[0].Name))
	for _, e := range g.Edges {
		a, b := g.Nodes[e.From], g.Nodes[e.To]
		class := "edge"
		label := e.Predicate
		if e.OnPath {
			class += " onpath"
			label += " (on path)"
		}
		w.f(`<g class="%s"><title>%s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, class, esc(a.Name+" "+e.Predicate+" "+b.Name), a.x, a.y, b.x, b.y)
		w.text((a.x+b.x)/2, (a.y+b.y)/2-3, "elabel", label)
		w.f(`</g>`)
	}
	for i, n := range g.Nodes {
		class := "node"
		if i == 0 {
			class += " center"
		}
		if n.OnPath {
			class += " onpath"
		}
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("entity", n.Name)
		w.f(`<a href="%s" class="%s" aria-label="%s"><title>%s</title>`, esc(UserURL(user, "graph")+"?"+v.Encode()), class,
			esc(fmt.Sprintf("%s, %d hop(s) away; centre the graph here", n.Name, n.Depth)), esc(n.Name))
		w.f(`<circle cx="%.1f" cy="%.1f" r="%.0f"/>`, n.x, n.y, map[bool]float64{true: 9, false: 6}[i == 0])
		w.text(n.x+10, n.y+4, "nlabel", n.Name)
		w.f(`</a>`)
	}
	w.f(`</svg>`)
	return w.String()
}

type graphData struct {
	Entity, Q, Path string
	Depth           int
	SVG             string
	Graph           graph
	Found           bool
}

func (h *Handler) graph(w http.ResponseWriter, r *http.Request) {
	ctx, user := r.Context(), r.PathValue("user")
	q := r.URL.Query()
	d := graphData{Entity: strings.TrimSpace(q.Get("entity")), Q: strings.TrimSpace(q.Get("q")), Depth: 2}
	if d.Entity == "" {
		d.Entity = "user"
	}
	if s := q.Get("depth"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 3 {
			h.fail(w, r, fmt.Errorf("%w: depth must be 1, 2 or 3, got %q", ErrBadRequest, s))
			return
		}
		d.Depth = n
	}
	valid, known, err := h.instants(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	facts, err := h.e.AsOf(ctx, user, valid, known)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Graph = neighbourhood(facts, d.Entity, d.Depth)
	d.Found = len(d.Graph.Nodes) > 0
	if d.Q != "" {
		res, err := h.e.Query(ctx, user, d.Q, memor.QueryOptions{K: 5, ValidAt: valid, KnownAt: known})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, x := range res {
			if x.Path != "" {
				d.Path = x.Path
				break
			}
		}
	}
	if d.Found {
		d.Graph.markPath(d.Path)
		d.Graph.layout()
		d.SVG = d.Graph.svg(user, q)
	}
	h.render(w, r, "graph.html", page{Title: "Graph of " + user, User: user, View: "graph", Data: d})
}
