// Package scoring holds bleve queries that score the way Elasticsearch's
// query DSL expects where bleve's own do not: DisMax (dis_max, and
// multi_match of types best_fields and phrase), which takes the best
// clause's score instead of a sum, and Boost, which applies a boost to
// bleve's compound queries (conjunction, disjunction, boolean), whose own
// boost is kept but never applied to their scores.
//
// Both take part in bleve's query normalisation as a boosted bleve term
// query does: a boost b scales the query's squared weight by b² and its
// scores by b, so inside a compound query it weighs against its siblings
// exactly as a term query with boost b would.
package scoring
