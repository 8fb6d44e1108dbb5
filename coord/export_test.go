package coord

// StatsCacheUsage returns how many entries the coordinator's statistics
// cache holds and the bytes they use (for package coord_test).
func StatsCacheUsage(c *Coordinator) (entries int, used int64) {
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	return c.stats.lru.Len(), c.stats.used
}
