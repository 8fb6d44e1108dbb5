package state

// AliasActionType is what an alias action does.
type AliasActionType string

// Alias action types, as Elasticsearch's _aliases actions.
const (
	// AliasAdd adds the alias to the index, or replaces its definition.
	AliasAdd AliasActionType = "add"
	// AliasRemove removes the alias from the index; with MustExist it is
	// refused when the index does not carry it.
	AliasRemove AliasActionType = "remove"
	// AliasRemoveIndex deletes the index itself (with its aliases).
	AliasRemoveIndex AliasActionType = "remove_index"
)

// AliasAction is one step of an atomic alias update (Elasticsearch's
// _aliases actions, cluster's UpdateAliases command): add or remove an
// alias of an index, or delete the index. It names the index by name and
// UUID; a caller that knows only the name leaves UUID to the metadata
// adapter, which adds it from the state it proposes against. Spec is the
// alias's definition for AliasAdd.
type AliasAction struct {
	Type      AliasActionType `json:"type"`
	Index     string          `json:"index"`
	UUID      string          `json:"uuid"`
	Alias     string          `json:"alias,omitempty"`
	Spec      Alias           `json:"spec,omitempty"`
	MustExist bool            `json:"must_exist,omitempty"`
}
