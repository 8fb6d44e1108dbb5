package coord

import (
	"strconv"

	"github.com/weftsearch/weft/cluster/state"
)

// Health is the cluster's (or some indexes') shard allocation summary,
// computed from the committed shard table as Elasticsearch computes it
// (its cluster health response, in its JSON shape); with level=indices
// (or shards) per index (and per shard) too. The one rule that colours a
// shard is state.State.ShardHealth.
type Health struct {
	ClusterName       string `json:"cluster_name"`
	Status            string `json:"status"`
	TimedOut          bool   `json:"timed_out"`
	NumberOfNodes     int    `json:"number_of_nodes"`
	NumberOfDataNodes int    `json:"number_of_data_nodes"`
	ShardCounts
	DelayedUnassignedShards     int                     `json:"delayed_unassigned_shards"`
	NumberOfPendingTasks        int                     `json:"number_of_pending_tasks"`
	NumberOfInFlightFetch       int                     `json:"number_of_in_flight_fetch"`
	TaskMaxWaitingInQueueMillis int                     `json:"task_max_waiting_in_queue_millis"`
	ActiveShardsPercentAsNumber float64                 `json:"active_shards_percent_as_number"`
	Indices                     map[string]*IndexHealth `json:"indices,omitempty"`
}

// ShardCounts are the copy counts health reports at every level.
type ShardCounts struct {
	ActivePrimaryShards     int `json:"active_primary_shards"`
	ActiveShards            int `json:"active_shards"`
	RelocatingShards        int `json:"relocating_shards"`
	InitializingShards      int `json:"initializing_shards"`
	UnassignedShards        int `json:"unassigned_shards"`
	UnassignedPrimaryShards int `json:"unassigned_primary_shards"`
}

func (c *ShardCounts) add(o ShardCounts) {
	c.ActivePrimaryShards += o.ActivePrimaryShards
	c.ActiveShards += o.ActiveShards
	c.RelocatingShards += o.RelocatingShards
	c.InitializingShards += o.InitializingShards
	c.UnassignedShards += o.UnassignedShards
	c.UnassignedPrimaryShards += o.UnassignedPrimaryShards
}

// IndexHealth is one index's section of level=indices.
type IndexHealth struct {
	Status           string `json:"status"`
	NumberOfShards   int    `json:"number_of_shards"`
	NumberOfReplicas int    `json:"number_of_replicas"`
	ShardCounts
	Shards map[string]*ShardHealth `json:"shards,omitempty"`
}

// ShardHealth is one shard's section of level=shards.
type ShardHealth struct {
	Status        string `json:"status"`
	PrimaryActive bool   `json:"primary_active"`
	ShardCounts
}

// Health counts the copies of the named indexes at level ("cluster",
// "indices" or "shards"); ClusterName is left to the caller.
func (c *Coordinator) Health(names []string, level string) (Health, error) {
	v, err := c.readView()
	if err != nil {
		return Health{}, err
	}
	return HealthOf(v, names, level), nil
}

// HealthOf counts the copies of the named indexes of v: a shard is red
// without an active primary, yellow with fewer active replicas than it
// should have.
func HealthOf(v *state.State, names []string, level string) Health {
	h := Health{Status: state.HealthGreen}
	for _, n := range v.Nodes {
		if n.Live {
			h.NumberOfNodes++
			h.NumberOfDataNodes++
		}
	}
	if level == "indices" || level == "shards" {
		h.Indices = map[string]*IndexHealth{}
	}
	for _, name := range names {
		ix, ok := v.Indices[name]
		if !ok {
			continue
		}
		ih := &IndexHealth{Status: state.HealthGreen, NumberOfShards: ix.NumberOfShards, NumberOfReplicas: ix.NumberOfReplicas}
		if level == "shards" {
			ih.Shards = map[string]*ShardHealth{}
		}
		for k := range ix.Shards {
			sh := shardHealthOf(v, ix, k)
			ih.add(sh.ShardCounts)
			ih.Status = state.WorseHealth(ih.Status, sh.Status)
			if ih.Shards != nil {
				ih.Shards[strconv.Itoa(k)] = sh
			}
		}
		h.add(ih.ShardCounts)
		h.Status = state.WorseHealth(h.Status, ih.Status)
		if h.Indices != nil {
			h.Indices[name] = ih
		}
	}
	total := h.ActiveShards + h.InitializingShards + h.UnassignedShards
	h.ActiveShardsPercentAsNumber = 100
	if total > 0 {
		h.ActiveShardsPercentAsNumber = 100 * float64(h.ActiveShards) / float64(total)
	}
	return h
}

// shardHealthOf counts one shard's copies.
func shardHealthOf(v *state.State, ix *state.Index, num int) *ShardHealth {
	sh := &ix.Shards[num]
	out := &ShardHealth{}
	c := &out.ShardCounts
	replicas := 0
	for _, cp := range sh.Copies {
		switch {
		case cp.RelocatingFrom != "":
			c.InitializingShards++
			continue
		case v.Active(cp):
			c.ActiveShards++
			if cp.RelocatingTo != "" {
				c.RelocatingShards++
			}
		case v.NodeLive(cp.NodeID):
			c.InitializingShards++
		default:
			c.UnassignedShards++
		}
		if cp.Primary {
			out.PrimaryActive = v.Active(cp)
			if out.PrimaryActive {
				c.ActivePrimaryShards++
			}
			continue
		}
		replicas++
	}
	if _, ok := sh.Primary(); !ok {
		c.UnassignedShards++
	}
	if !out.PrimaryActive {
		c.UnassignedPrimaryShards++
	}
	c.UnassignedShards += max(0, ix.NumberOfReplicas-replicas)
	out.Status = v.ShardHealth(ix, num)
	return out
}
