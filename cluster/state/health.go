package state

// Health colours, worst first.
const (
	HealthRed    = "red"
	HealthYellow = "yellow"
	HealthGreen  = "green"
)

// ShardHealth is the health of shard num of ix, by the one rule every
// health report uses (Elasticsearch's): red without an active primary,
// yellow with fewer active replicas than ix.NumberOfReplicas, else green.
// A copy recovering into a move (RelocatingFrom set) counts for neither.
func (s *State) ShardHealth(ix *Index, num int) string {
	primary, replicas := false, 0
	for _, cp := range ix.Shards[num].Copies {
		if cp.RelocatingFrom != "" || !s.Active(cp) {
			continue
		}
		if cp.Primary {
			primary = true
		} else {
			replicas++
		}
	}
	switch {
	case !primary:
		return HealthRed
	case replicas < ix.NumberOfReplicas:
		return HealthYellow
	}
	return HealthGreen
}

// IndexHealth is the worst health of ix's shards (ShardHealth).
func (s *State) IndexHealth(ix *Index) string {
	status := HealthGreen
	for num := range ix.Shards {
		switch s.ShardHealth(ix, num) {
		case HealthRed:
			return HealthRed
		case HealthYellow:
			status = HealthYellow
		}
	}
	return status
}

// healthRank orders the health colours, worst first.
var healthRank = map[string]int{HealthRed: 0, HealthYellow: 1, HealthGreen: 2}

// HealthAtLeast reports whether health have is want or better; ok is false
// when want is not a health colour.
func HealthAtLeast(have, want string) (atLeast, ok bool) {
	w, ok := healthRank[want]
	return ok && healthRank[have] >= w, ok
}

// WorseHealth is the worse of two health colours.
func WorseHealth(a, b string) string {
	if healthRank[b] < healthRank[a] {
		return b
	}
	return a
}
