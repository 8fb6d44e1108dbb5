package esyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	yaml "go.yaml.in/yaml/v3"
)

// File is one parsed YAML test file.
type File struct {
	// Path is the file's path; API is its directory's name ("search",
	// "indices.create"), the unit results are summed by.
	Path, API string
	Setup     []Step
	Teardown  []Step
	Tests     []Test
}

// Test is one named test of a file.
type Test struct {
	Name  string
	Steps []Step
}

// Step is one element of a section: a single-key map such as
// {"do": {...}} or {"match": {...}}.
type Step struct {
	Kind string
	Arg  any
}

// ParseFile reads one YAML test file: a stream of documents, each holding
// one section (setup, teardown or a test) as a list of steps.
func ParseFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, API: filepath.Base(filepath.Dir(path))}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string][]map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		names := make([]string, 0, len(doc))
		for name := range doc {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			steps, err := parseSteps(doc[name])
			if err != nil {
				return nil, fmt.Errorf("%s: section %q: %w", path, name, err)
			}
			switch name {
			case "setup":
				f.Setup = append(f.Setup, steps...)
			case "teardown":
				f.Teardown = append(f.Teardown, steps...)
			default:
				f.Tests = append(f.Tests, Test{Name: name, Steps: steps})
			}
		}
	}
	return f, nil
}

func parseSteps(raw []map[string]any) ([]Step, error) {
	out := make([]Step, 0, len(raw))
	for i, m := range raw {
		if len(m) != 1 {
			return nil, fmt.Errorf("step %d has %d keys, want one", i, len(m))
		}
		for k, v := range m {
			out = append(out, Step{Kind: k, Arg: v})
		}
	}
	return out, nil
}

// FindFiles lists the .yml files under dir, sorted.
func FindFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (filepath.Ext(p) == ".yml" || filepath.Ext(p) == ".yaml") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
