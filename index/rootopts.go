package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// rootOpts are a mapping's root parameters besides properties and
// dynamic: _source, _meta, date_detection and numeric_detection. They are
// kept and returned as given; the API honours _source (enabled false hides
// the source from every reply; includes and excludes filter it) and
// dynamic mapping honours the detections.
type rootOpts struct {
	source           *sourceOpts
	meta             json.RawMessage
	dateDetection    *bool
	numericDetection *bool
}

// sourceOpts is the _source root parameter.
type sourceOpts struct {
	Enabled  *bool    `json:"enabled,omitempty"`
	Mode     string   `json:"mode,omitempty"` // "stored" or "synthetic"
	Includes []string `json:"includes,omitempty"`
	Excludes []string `json:"excludes,omitempty"`
}

func (r *rootOpts) set(key string, v json.RawMessage) error {
	switch key {
	case "_source":
		var so sourceOpts
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&so); err != nil {
			return fmt.Errorf("%w: [_source] must be an object of enabled, mode, includes and excludes: %v", ErrInvalidMapping, err)
		}
		switch so.Mode {
		case "", "stored", "synthetic", "disabled":
		default:
			return fmt.Errorf("%w: [_source] mode [%s] is not one of stored, synthetic, disabled", ErrInvalidMapping, so.Mode)
		}
		if so.Mode == "disabled" {
			f := false
			so.Enabled, so.Mode = &f, ""
		}
		r.source = &so
	case "_meta":
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("%w: [_meta] must be an object", ErrInvalidMapping)
		}
		r.meta = slices.Clone(v)
	case "date_detection", "numeric_detection":
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return fmt.Errorf("%w: [%s] must be true or false", ErrInvalidMapping, key)
		}
		if key == "date_detection" {
			r.dateDetection = &b
		} else {
			r.numericDetection = &b
		}
	}
	return nil
}

// merge applies an update's root parameters over r, with Elasticsearch's
// rules: _source enabled cannot change, and synthetic source cannot become
// stored again.
func (r rootOpts) merge(upd rootOpts) (rootOpts, error) {
	out := r.clone()
	if upd.source != nil {
		cur := out.source
		if cur == nil {
			cur = &sourceOpts{}
		}
		if (cur.Enabled == nil || *cur.Enabled) != (upd.source.Enabled == nil || *upd.source.Enabled) {
			return r, fmt.Errorf("%w: Cannot update parameter [enabled] from [%t] to [%t]", ErrMappingConflict, cur.Enabled == nil || *cur.Enabled, upd.source.Enabled == nil || *upd.source.Enabled)
		}
		if cur.Mode == "synthetic" && upd.source.Mode != "synthetic" {
			to := upd.source.Mode
			if to == "" {
				to = "stored"
			}
			return r, fmt.Errorf("%w: Cannot update parameter [mode] from [synthetic] to [%s]", ErrMappingConflict, to)
		}
		so := *upd.source
		out.source = &so
	}
	if upd.meta != nil {
		out.meta = upd.meta
	}
	if upd.dateDetection != nil {
		out.dateDetection = upd.dateDetection
	}
	if upd.numericDetection != nil {
		out.numericDetection = upd.numericDetection
	}
	return out, nil
}

func (r rootOpts) clone() rootOpts {
	out := r
	if r.source != nil {
		so := *r.source
		so.Includes, so.Excludes = slices.Clone(so.Includes), slices.Clone(so.Excludes)
		out.source = &so
	}
	return out
}

func (r rootOpts) toJSON(out map[string]any) {
	if r.source != nil {
		out["_source"] = r.source
	}
	if r.meta != nil {
		out["_meta"] = r.meta
	}
	if r.dateDetection != nil {
		out["date_detection"] = *r.dateDetection
	}
	if r.numericDetection != nil {
		out["numeric_detection"] = *r.numericDetection
	}
}

// SourceFilter says what of a document's _source replies show:
// enabled false shows none; includes and excludes (patterns) filter it.
func (m *Mapping) SourceFilter() (enabled bool, includes, excludes []string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	so := m.root.source
	if so == nil {
		return true, nil, nil
	}
	return so.Enabled == nil || *so.Enabled, slices.Clone(so.Includes), slices.Clone(so.Excludes)
}

// detection returns the date and numeric detection of dynamic mapping
// (Elasticsearch's defaults: dates on, numbers off).
func (m *Mapping) detection() (dates, numbers bool) {
	dates = m.root.dateDetection == nil || *m.root.dateDetection
	numbers = m.root.numericDetection != nil && *m.root.numericDetection
	return dates, numbers
}
