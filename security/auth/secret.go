package auth

import "log/slog"

// Secret is a password or an API key secret. Its String, GoString, JSON and
// slog forms are redacted, so a Secret that reaches a log line, an error
// message or an audit event by mistake shows "::es_redacted::" (the marker
// Elasticsearch's own logs use) and never the value. Reveal gives the value
// to the one place that needs it: a hasher.
type Secret string

const redacted = "::es_redacted::"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns the redaction marker.
func (Secret) String() string { return redacted }

// GoString returns the redaction marker, for %#v.
func (Secret) GoString() string { return redacted }

// MarshalJSON writes the redaction marker.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// LogValue writes the redaction marker in slog records.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }
