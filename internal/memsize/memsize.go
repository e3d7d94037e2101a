// Package memsize estimates what Go's heap spends on a value, for the
// indexes' accounts of the memory they hold (the engine's index cache
// keeps users within a budget by those accounts). A length or a capacity
// is not what the runtime spends: an allocation is rounded up to its
// size class, and a map holds slack slots and control bytes that grow in
// steps. Estimates within a few percent of the runtime's, measured by
// this package's tests, are what keep a cache's budget honest.
package memsize

import "math/bits"

// classes are the runtime's small size classes (runtime/sizeclasses.go,
// unchanged since Go 1.21).
var classes = [...]uint16{
	8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768,
	896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200,
	3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760,
	24576, 27264, 28672, 32768,
}

// pageBytes is the runtime's page: a large allocation takes whole pages.
const pageBytes = 8192

// Alloc is what an allocation of n bytes takes from the heap: 0 for
// none, its size class for a small one, whole pages for a large one.
// Up to 8 bytes it is n: the runtime packs such allocations without
// pointers (short strings, what the indexes hold most) into shared
// 16-byte blocks.
func Alloc(n int) int {
	switch {
	case n <= 8:
		return max(n, 0)
	case n <= smallMax:
		return int(classes[bySmall[(n+7)>>3]])
	case n <= int(classes[len(classes)-1]):
		return int(classes[byLarge[(n-smallMax+127)>>7]])
	}
	return (n + pageBytes - 1) / pageBytes * pageBytes
}

// The runtime's own lookup of a size's class (size_to_class8 and
// size_to_class128 in runtime/sizeclasses.go): by
// 8-byte steps up to smallMax, by 128-byte steps above. Accounts price
// an allocation at every write, so this is a table, not a search.
const smallMax = 1024

var bySmall, byLarge = classTables()

// classTables returns, for each step, the index of the least class that
// holds its largest size.
func classTables() (small [smallMax/8 + 1]uint8, large [(32768-smallMax)/128 + 1]uint8) {
	least := func(n int) uint8 {
		i := 0
		for int(classes[i]) < n {
			i++
		}
		return uint8(i)
	}
	for i := range small {
		small[i] = least(i * 8)
	}
	for i := range large {
		large[i] = least(smallMax + i*128)
	}
	return small, large
}

// Slice is what a slice of capacity c of elements of elem bytes takes.
func Slice(c, elem int) int { return Alloc(c * elem) }

// String is what a string of n bytes takes beside its header (a string
// made from bytes is allocated once, rounded to its class).
func String(n int) int { return Alloc(n) }

// The runtime's maps (Go 1.24's swiss tables) hold their entries in
// groups of groupSlots slots, each group with a control word; a table
// grows by doubling up to maxTableSlots and then splits, keeping every
// table at most 7/8 full.
const (
	groupSlots    = 8
	maxTableSlots = 1024
	mapHeader     = 48 // the map's own struct
	tableHeader   = 32 // a table's struct, in its size class
)

// Map is what a map of n entries takes, each slot (key and value, with
// their alignment) slot bytes, beside the word that points to it. A map
// grown by inserts is, on average, between half and 7/8 full at the
// table level; Map assumes the capacity those inserts reach (within a
// tenth of the runtime's, but while tables split: a fifth).
func Map(n, slot int) int {
	group := groupSlots + groupSlots*slot // control word, then slots
	if n == 0 {
		return mapHeader
	}
	if n <= groupSlots {
		return mapHeader + Alloc(group)
	}
	// Capacity: the least power of two holding n at 7/8 load.
	need := (n*8 + 6) / 7
	slots := 1 << bits.Len(uint(need-1))
	if slots <= maxTableSlots {
		return mapHeader + tableHeader + 8 + Alloc(slots/groupSlots*group)
	}
	// Past one table, a table splits in two when it is 7/8 full; keys
	// hash evenly, so the tables fill together and their number is the
	// least power of two that holds n.
	tables := 1 << bits.Len(uint((n+maxTableSlots*7/8-1)/(maxTableSlots*7/8)-1))
	return mapHeader + Alloc(8*tables) + tables*(tableHeader+Alloc(maxTableSlots/groupSlots*group))
}

// MapSized is Map for a map made with a size hint (make(map[K]V, hint))
// holding n entries: the runtime sizes such a map at once for the hint,
// and grows it as Map says once n outgrows that.
func MapSized(hint, n, slot int) int {
	if hint <= groupSlots {
		return Map(n, slot)
	}
	group := groupSlots + groupSlots*slot
	target := hint * 8 / 7
	tables := 1 << bits.Len(uint((target+maxTableSlots-1)/maxTableSlots-1))
	perTable := max(1<<bits.Len(uint(target/tables-1)), groupSlots)
	sized := mapHeader + Alloc(8*tables) + tables*(tableHeader+Alloc(perTable/groupSlots*group))
	return max(sized, Map(n, slot))
}
