package pipelines

import (
	"fmt"
	"maps"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kwdata/kwdata/kw"
)

// checkShape compares a configuration node tree with the Go type it will
// be decoded into, before decoding: an unknown key or a value of the wrong
// kind becomes a problem naming its key, its line and what to write, in
// the operator's words (never a Go type name), and is removed from the
// tree so that decoding goes on and every other problem is found too. A
// single value where a list of paths is expected is taken as a list of
// one. bad collects the keys reported.
func checkShape(n *yaml.Node, t reflect.Type, key string, p *problems, bad map[string]bool) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		root := n.Content[0]
		if root.Kind != yaml.MappingNode && !isNull(root) {
			p.addf("the file is not a list of key: value settings (line %d); start with e.g. data: ./data", root.Line)
			n.Content = nil
			bad[""] = true
			return
		}
		checkShape(root, t, key, p, bad)
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := yamlFields(t)
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			sub := joinKey(key, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				known := strings.Join(fieldNames(t), ", ")
				if s := suggest(k.Value, fields); s != "" {
					p.addf("%s (line %d) is not a known key; write %s (the keys %s: %s)", sub, k.Line, s, where(key), known)
				} else {
					p.addf("%s (line %d) is not a known key; remove it, or write one of the keys %s: %s", sub, k.Line, where(key), known)
				}
				bad[sub] = true
				continue
			}
			if !valueFits(v, ft, sub, p, bad) {
				continue
			}
			kept = append(kept, k, v)
		}
		n.Content = kept
	case reflect.Map:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if valueFits(v, t.Elem(), joinKey(key, k.Value), p, bad) {
				kept = append(kept, k, v)
			}
		}
		n.Content = kept
	case reflect.Slice:
		kept := n.Content[:0]
		for i, v := range n.Content {
			if valueFits(v, t.Elem(), fmt.Sprintf("%s[%d]", key, i), p, bad) {
				kept = append(kept, v)
			}
		}
		n.Content = kept
	}
}

// valueFits checks one value against its type, descending into sections
// and lists; false means it was reported and must be dropped.
func valueFits(v *yaml.Node, t reflect.Type, key string, p *problems, bad map[string]bool) bool {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if isNull(v) {
		return true // an empty value: the key's default, or "is empty" later
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := kindWords(t)
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if v.Kind == yaml.MappingNode {
			checkShape(v, t, key, p, bad)
			return true
		}
	case reflect.Slice:
		if v.Kind == yaml.ScalarNode && t.Elem().Kind() == reflect.String {
			// One path where a list is expected: a list of one.
			elem := *v
			*v = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: v.Line, Column: v.Column, Content: []*yaml.Node{&elem}}
			return true
		}
		if v.Kind == yaml.SequenceNode {
			checkShape(v, t, key, p, bad)
			return true
		}
	case reflect.String:
		if v.Kind == yaml.ScalarNode {
			return true
		}
	case reflect.Int, reflect.Int64:
		if v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
			return true
		}
	case reflect.Float64:
		if v.Kind == yaml.ScalarNode && (v.Tag == "!!int" || v.Tag == "!!float") {
			return true
		}
	default:
		return true
	}
	got := describeNode(v)
	hint := ""
	if v.Kind == yaml.ScalarNode && strings.Contains(v.Value, "${") && (t.Kind() == reflect.Int || t.Kind() == reflect.Int64 || t.Kind() == reflect.Float64) {
		hint = " (numbers cannot come from variables)"
	}
	p.addf("%s (line %d) is %s, not %s%s; write %s", key, v.Line, got, want, hint, example(key, t))
	bad[key] = true
	return false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describeNode says what the operator wrote, briefly.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a section of key: value settings"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("%q", v)
}

// kindWords names what a type takes, in the file's terms.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a section of key: value settings"
	case reflect.Slice:
		return "a list"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return "a single value"
}

// example shows a value of the right kind under the key's own name.
func example(key string, t reflect.Type) string {
	name := key
	if i := strings.LastIndexAny(key, ".["); i >= 0 && key[i] == '.' {
		name = key[i+1:]
	} else if i >= 0 {
		return "one " + strings.TrimPrefix(kindWords(t), "a ")
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return fmt.Sprintf("%s: followed by indented key: value lines", name)
	case reflect.Slice:
		return fmt.Sprintf("%s: [a, b]", name)
	case reflect.Int, reflect.Int64:
		if v, ok := intExamples[name]; ok {
			return fmt.Sprintf("%s: %d", name, v)
		}
		return fmt.Sprintf("%s: 30", name)
	case reflect.Float64:
		return fmt.Sprintf("%s: 1.5", name)
	}
	if v, ok := exampleValues[name]; ok {
		return fmt.Sprintf("%s: %s", name, v)
	}
	return fmt.Sprintf("%s: value", name)
}

// intExamples are the defaults of the whole-number keys whose default this
// package knows, so that a hint never suggests another value than the one
// the key takes when left out.
var intExamples = map[string]int{
	"keep_days":    DefaultKeepDays,
	"keep_builds":  DefaultKeepBuilds,
	"max_age_days": kw.DefaultSERPMaxAgeDays,
}

// exampleValues are sample values of the text keys, for the problems that
// say what to write.
var exampleValues = map[string]string{
	"data":              "./data",
	"schedule":          `"0 3 * * *"`,
	"timezone":          "UTC",
	"customer_id":       `"1234567890"`,
	"login_customer_id": `"9876543210"`,
	"endpoint":          "https://host",
	"token_url":         "https://oauth2.googleapis.com/token",
}

// yamlFields maps the yaml names of a struct's fields to their types; the
// fields of an inline struct (a section another package owns, such as
// ingest.Sources) are keys of the struct that holds it.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" {
			maps.Copy(out, yamlFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// fieldNames lists the keys of a section in their declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		switch {
		case opts == "inline":
			out = append(out, fieldNames(t.Field(i).Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}

func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func where(section string) string {
	if section == "" {
		return "at the top of the file"
	}
	return "of " + section
}

// suggest names the known key a typo most likely meant, or "".
func suggest(typo string, fields map[string]reflect.Type) string {
	best, bestDist := "", 3
	for name := range fields {
		if d := editDistance(strings.ToLower(typo), name); d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
