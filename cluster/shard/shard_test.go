package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/memor-db/memor/cluster/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// Where a user's shard is must never change: a store's users live there.
func TestOfIsStable(t *testing.T) {
	for user, want := range map[string]int{"alice": 7, "bob": 20, "": 37, "用户": 57, "a.b.*": 36} {
		if got := Of(user, 64); got != want {
			t.Errorf("Of(%q, 64) = %d, pinned %d: changing the shard function moves every user", user, got, want)
		}
	}
}

// Users spread evenly: no shard of 16 holds more than 1.2× its share of
// 20,000 users.
func TestOfSpreads(t *testing.T) {
	counts := make([]int, 16)
	for i := range 20000 {
		counts[Of(fmt.Sprintf("user-%d@example.com", i), 16)]++
	}
	for s, c := range counts {
		if math.Abs(float64(c)-1250) > 250 {
			t.Errorf("shard %d holds %d users of 20000", s, c)
		}
	}
}

func open(t *testing.T, js jetstream.JetStream, node string) *Leases {
	t.Helper()
	l, err := OpenLeases(context.Background(), js, Config{Node: node, TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLeaseLifecycle(t *testing.T) {
	url := natstest.Server(t, "").ClientURL()
	a, b := open(t, natstest.Connect(t, url), "node-a"), open(t, natstest.Connect(t, url), "node-b")
	ctx := context.Background()
	la, err := a.Acquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := b.Acquire(ctx, 3); !errors.As(err, &held) || held.Node != "node-a" || !errors.Is(err, ErrHeld) {
		t.Fatalf("b acquires a's shard: %v", err)
	}
	// Renewed within its TTL, the lease outlives it.
	for range 6 {
		time.Sleep(300 * time.Millisecond)
		if la, err = a.Renew(ctx, la); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	if _, err := b.Acquire(ctx, 3); !errors.Is(err, ErrHeld) {
		t.Fatalf("after renewals past the TTL: %v", err)
	}
	// Acquiring one's own lease renews it.
	if la, err = a.Acquire(ctx, 3); err != nil {
		t.Fatalf("a acquires its own lease: %v", err)
	}
	if owners, err := a.Owners(ctx); err != nil || owners[3] != "node-a" || len(owners) != 1 {
		t.Fatalf("owners %v %v", owners, err)
	}
	// a stops renewing (it died, or paused): b takes over after the TTL.
	deadline := time.Now().Add(10 * time.Second)
	var lb Lease
	for {
		lb, err = b.Acquire(ctx, 3)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrHeld) || time.Now().After(deadline) {
			t.Fatalf("b never took the expired lease: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// a wakes up: its renewal and its release fail, and leave b's lease.
	if _, err := a.Renew(ctx, la); !errors.Is(err, ErrLost) {
		t.Fatalf("a renews a lost lease: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrLost) {
		t.Fatalf("a releases a lost lease: %v", err)
	}
	if owners, _ := a.Owners(ctx); owners[3] != "node-b" {
		t.Fatalf("owners after the failover: %v", owners)
	}
	// A graceful drain: b releases, a acquires at once.
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, 3); err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
}

func TestConfig(t *testing.T) {
	js := natstest.Connect(t, natstest.Server(t, "").ClientURL())
	for name, c := range map[string]Config{"no node": {TTL: time.Second}, "space": {Node: "a b", TTL: time.Second}, "short TTL": {Node: "a", TTL: time.Millisecond}} {
		if _, err := OpenLeases(context.Background(), js, c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
