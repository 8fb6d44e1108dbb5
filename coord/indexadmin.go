package coord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/shard"
	"github.com/weftsearch/weft/vocab"
)

// Index administration beyond creation and deletion: aliases, opening and
// closing. Each change is committed through the cluster's metadata
// (IndexAdmin) and returns once this node's view holds it.

// admin returns the metadata's IndexAdmin, or ErrNotSupported.
func (c *Coordinator) admin() (shard.IndexAdmin, error) {
	a, ok := c.meta.(shard.IndexAdmin)
	if !ok {
		return nil, fmt.Errorf("%w: this node's metadata has no index administration (aliases, open and close, index settings)", ErrNotSupported)
	}
	return a, nil
}

// checkNewNames refuses, before anything is proposed, an index name that is
// an alias and aliases that are index names (the cluster refuses them too;
// this gives the error Elasticsearch gives).
func checkNewNames(v *state.State, index string, aliases map[string]state.Alias) error {
	if IsAlias(v, index) {
		return fmt.Errorf("%w: [%s]: an alias with the same name already exists", vocab.ErrInvalidIndexName, index)
	}
	for a := range aliases {
		if err := checkAliasName(v, a, index); err != nil {
			return err
		}
	}
	return nil
}

// checkAliasName applies Elasticsearch's alias name rules.
func checkAliasName(v *state.State, alias, index string) error {
	if alias == index {
		return fmt.Errorf("%w: Invalid alias name [%s]: an index or data stream exists with the same name as the alias", vocab.ErrInvalidRequest, alias)
	}
	if _, ok := v.Indices[alias]; ok {
		return fmt.Errorf("%w: Invalid alias name [%s]: an index or data stream exists with the same name as the alias", vocab.ErrInvalidRequest, alias)
	}
	if why := nameRule(alias); why != "" {
		return fmt.Errorf("%w: Invalid alias name [%s], %s", vocab.ErrInvalidRequest, Printable(alias), why)
	}
	return nil
}

// UpdateAliases applies alias actions atomically: all of them, or none.
func (c *Coordinator) UpdateAliases(ctx context.Context, actions []state.AliasAction) error {
	v, err := c.view()
	if err != nil {
		return err
	}
	admin, err := c.admin()
	if err != nil {
		return err
	}
	for _, a := range actions {
		ix, err := v.Index(a.Index)
		if err != nil {
			return err
		}
		if a.Type == state.AliasAdd {
			if err := checkAliasName(v, a.Alias, ix.Name); err != nil {
				return err
			}
		}
	}
	if err := admin.UpdateAliases(ctx, v, actions); err != nil {
		return err
	}
	_, err = c.meta.AwaitState(ctx, func(nv *state.State) bool { return aliasesApplied(v, nv, actions) })
	return err
}

// aliasesApplied reports whether now shows the effect of actions proposed
// from the view before (or their indices are gone).
func aliasesApplied(before, now *state.State, actions []state.AliasAction) bool {
	for _, a := range actions {
		old := before.Indices[a.Index]
		cur, ok := now.Indices[a.Index]
		if !ok || cur.UUID != old.UUID {
			continue // deleted (remove_index, or by someone else)
		}
		got, has := cur.Aliases[a.Alias]
		switch a.Type {
		case state.AliasRemoveIndex:
			return false
		case state.AliasRemove:
			if has {
				return false
			}
		case state.AliasAdd:
			if !has || !sameAlias(got, a.Spec) {
				return false
			}
		}
	}
	return true
}

func sameAlias(a, b state.Alias) bool {
	return bytes.Equal(a.Filter, b.Filter) && a.IndexRouting == b.IndexRouting && a.SearchRouting == b.SearchRouting &&
		(a.IsWriteIndex == nil) == (b.IsWriteIndex == nil) && (a.IsWriteIndex == nil || *a.IsWriteIndex == *b.IsWriteIndex) && a.IsHidden == b.IsHidden
}

// SetClosed closes the named indices (they refuse reads and writes, keep
// their copies) or opens them again.
func (c *Coordinator) SetClosed(ctx context.Context, names []string, closed bool) error {
	v, err := c.view()
	if err != nil {
		return err
	}
	admin, err := c.admin()
	if err != nil {
		return err
	}
	for _, name := range names {
		ix, err := v.Index(name)
		if err != nil {
			return err
		}
		if ix.Closed == closed {
			continue
		}
		if err := admin.SetIndexClosed(ctx, name, ix.UUID, closed); err != nil {
			return err
		}
		c.logger.Info("index state changed", "index", name, "closed", closed)
	}
	_, err = c.meta.AwaitState(ctx, func(nv *state.State) bool {
		return !slices.ContainsFunc(names, func(n string) bool { cur, ok := nv.Indices[n]; return ok && cur.Closed != closed })
	})
	return err
}

// isNull reports whether a setting's value is JSON null (a removal).
func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }
