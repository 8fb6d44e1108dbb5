package esdsl

import (
	"encoding/json"
	"math"

	"github.com/weftsearch/weft/internal/murmur3"
)

// partitionSeed is the murmur3 seed Elasticsearch hashes string terms with
// (IncludeExclude.HASH_PARTITIONING_SEED), so a client that pages through
// partitions gets the same terms in each as from Elasticsearch.
const partitionSeed = 31

// termPartition is a partitioned include ({"partition": p,
// "num_partitions": n}): a term belongs to partition floorMod(hash, n).
// Strings hash with murmur3 x86_32 of their UTF-8 bytes; whole numbers
// (long, date, boolean) with hppc's mix64 of the value; doubles with mix64
// of their sortable long bits, as Elasticsearch does.
type termPartition struct {
	part, parts int
	double      bool
}

func parsePartition(raw json.RawMessage, where string, double bool) (*termPartition, error) {
	o, err := asObject(raw, where)
	if err != nil {
		return nil, err
	}
	p := &termPartition{double: double}
	for _, k := range o.sortedKeys() {
		switch k {
		case "partition":
			p.part, err = asInt(o[k], where+"."+k)
		case "num_partitions":
			p.parts, err = asInt(o[k], where+"."+k)
		default:
			return nil, parsingErr("[%s] unknown key [%s]; a partitioned include has partition and num_partitions", where, k)
		}
		if err != nil {
			return nil, err
		}
	}
	if o["partition"] == nil || o["num_partitions"] == nil {
		return nil, argErr("[%s] a partitioned include needs both partition and num_partitions", where)
	}
	if p.parts < 1 || p.part < 0 || p.part >= p.parts {
		return nil, argErr("[%s] partition [%d] must be at least 0 and less than num_partitions [%d], which must be positive", where, p.part, p.parts)
	}
	return p, nil
}

// holds reports whether the bucket's term falls in the partition.
func (p *termPartition) holds(b *AggBucket, str bool) bool {
	var h int64
	switch {
	case str:
		h = int64(int32(murmur3.Sum32([]byte(b.Key), partitionSeed)))
	case p.double:
		h = mix64(sortableDoubleBits(b.Num))
	default:
		h = mix64(int64(b.Num))
	}
	m := h % int64(p.parts)
	if m < 0 {
		m += int64(p.parts)
	}
	return m == int64(p.part)
}

// mix64 is hppc's BitMixer.mix64.
func mix64(z int64) int64 {
	u := uint64(z)
	u = (u ^ (u >> 32)) * 0x4cd6944c5cc20b6d
	u = (u ^ (u >> 29)) * 0xfc12c5b19d3259e9
	return int64(u ^ (u >> 32))
}

// sortableDoubleBits is Lucene's NumericUtils.doubleToSortableLong.
func sortableDoubleBits(f float64) int64 {
	bits := int64(math.Float64bits(f))
	return bits ^ ((bits >> 63) & 0x7fffffffffffffff)
}
