package cluster

import (
	"fmt"
	"maps"
	"slices"

	"github.com/weftsearch/weft/cluster/state"
)

// Applying alias actions. The rules, Elasticsearch's: an alias name is
// never an index name; an alias has at most one write index; a filter is
// a JSON object. UpdateAliases applies its actions in order on the next
// state, which apply throws away if any of them is refused.

func (s draft) updateAliases(c *UpdateAliases) error {
	if len(c.Actions) == 0 {
		return fmt.Errorf("%w: update_aliases needs at least one action", ErrInvalidCommand)
	}
	for k, a := range c.Actions {
		if err := s.aliasAction(a); err != nil {
			return fmt.Errorf("action %d (%s): %w", k, a.Type, err)
		}
	}
	return nil
}

func (s draft) aliasAction(a state.AliasAction) error {
	ix, err := s.namedIndex(a.Index, a.UUID)
	if err != nil {
		return err
	}
	switch a.Type {
	case state.AliasAdd:
		return s.addAlias(ix.Name, a.Alias, a.Spec)
	case state.AliasRemove:
		if _, ok := ix.Aliases[a.Alias]; !ok {
			if a.MustExist {
				return fmt.Errorf("%w: index %q has no alias %q", ErrInvalidCommand, ix.Name, a.Alias)
			}
			return nil
		}
		ix = s.editIndex(ix)
		ix.Aliases = maps.Clone(ix.Aliases)
		delete(ix.Aliases, a.Alias)
		if len(ix.Aliases) == 0 {
			ix.Aliases = nil
		}
		return nil
	case state.AliasRemoveIndex:
		return s.deleteIndex(&DeleteIndex{Name: ix.Name, UUID: ix.UUID})
	}
	return fmt.Errorf("%w: unknown alias action %q", ErrInvalidCommand, a.Type)
}

// addAlias puts the alias on the (existing) index, replacing its
// definition there if it has one.
func (s draft) addAlias(index, alias string, spec state.Alias) error {
	if err := checkName("alias name", alias); err != nil {
		return err
	}
	if _, ok := s.Indices[alias]; ok {
		return fmt.Errorf("%w: alias %q is an index name", ErrInvalidCommand, alias)
	}
	if len(spec.Filter) > 0 {
		if err := checkObject("alias filter", spec.Filter); err != nil {
			return err
		}
	}
	if spec.IsWriteIndex != nil && *spec.IsWriteIndex {
		for _, other := range s.AliasIndices(alias) {
			if w := s.Indices[other].Aliases[alias].IsWriteIndex; other != index && w != nil && *w {
				return fmt.Errorf("%w: alias %q has a write index already (%q)", ErrInvalidCommand, alias, other)
			}
		}
	}
	ix := s.editIndex(s.Indices[index])
	ix.Aliases = maps.Clone(ix.Aliases)
	if ix.Aliases == nil {
		ix.Aliases = map[string]state.Alias{}
	}
	spec.Filter = slices.Clone(spec.Filter)
	ix.Aliases[alias] = spec
	return nil
}
