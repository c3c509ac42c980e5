package rest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/filemill/filemill/domain"
)

// openAPIYAML is the /v1 contract as written by hand. YAML because it is long and
// commented; clients get JSON, the format every OpenAPI tool reads.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIJSON converts the document once. The document is embedded and checked by the
// tests, so a conversion failure is a build defect, not a runtime condition: it panics
// the first time the document is asked for (at server construction, via OpenAPIHandler).
var openAPIJSON = sync.OnceValue(func() []byte {
	b, err := yamlToJSON(openAPIYAML)
	if err != nil {
		panic("rest: openapi.yaml: " + err.Error())
	}
	return b
})

// APIVersion is the version of the /v1 contract: the OpenAPI document's info.version.
// Read on first use, not at start-up: parsing the document costs every process of the
// binary, the command-line client among them, 25 ms and 1.6 MB it never needs.
var APIVersion = sync.OnceValue(func() string {
	var root yaml.Node
	if err := yaml.Unmarshal(openAPIYAML, &root); err == nil && len(root.Content) > 0 {
		if v := mappingValue(mappingValue(root.Content[0], "info"), "version"); v != nil && v.Value != "" {
			return v.Value
		}
	}
	panic("rest: openapi.yaml has no info.version") // embedded and tested: a build defect
})

// DocsURL is where people read how to use the service: the project's README.
const DocsURL = "https://github.com/filemill/filemill#readme"

// OpenAPIJSON returns the OpenAPI 3.1 document of the /v1 contract as JSON. The caller
// owns the returned slice.
func OpenAPIJSON() []byte { return bytes.Clone(openAPIJSON()) }

// OpenAPIDocument returns the document a deployment serves: the written one, with the
// options of every operation and preset of reg generated into the schema
// OperationOptions from the same declarations the service checks options against.
func OpenAPIDocument(reg *domain.Registry) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(openAPIYAML, &root); err != nil {
		return nil, err
	}
	schemas := mappingValue(mappingValue(root.Content[0], "components"), "schemas")
	if schemas == nil {
		return nil, fmt.Errorf("openapi.yaml has no components.schemas")
	}
	props := map[string]any{}
	names := []string{}
	for _, op := range reg.List() {
		key := op.Name
		if op.Kind == domain.KindPreset {
			key = "preset:" + op.Name
		}
		props[key] = op.OptionsSchema()
		names = append(names, key)
	}
	gen := map[string]any{
		"type":        "object",
		"description": "The `options` each operation takes (and, under `preset:NAME`, each preset), by name: generated from the engines' declarations, the schemas requests are checked against. The same schemas are `options_schema` of `GET /v1/operations`.",
		"properties":  props,
	}
	raw, err := json.Marshal(gen)
	if err != nil {
		return nil, err
	}
	var value yaml.Node
	if err := yaml.Unmarshal(raw, &value); err != nil {
		return nil, err
	}
	schemas.Content = append(schemas.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "OperationOptions"}, value.Content[0])
	var buf bytes.Buffer
	if err := writeJSONNode(&buf, &root, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mappingValue is the value of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// OpenAPIHandler serves an OpenAPI document as JSON (GET /v1/openapi.json).
func OpenAPIHandler(doc []byte) http.Handler {
	length := strconv.Itoa(len(doc))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", length)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(doc)
	})
}

// yamlToJSON converts a YAML document to JSON, walking the node tree rather than
// decoding into maps so that the JSON keeps the document's key order (tools such as
// Swagger UI show paths and properties in document order). Aliases are expanded.
func yamlToJSON(src []byte) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeJSONNode(&buf, &root, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxAliasDepth bounds alias expansion: the document nests a handful of levels, so
// anything deeper is a cycle.
const maxAliasDepth = 64

func writeJSONNode(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > maxAliasDepth {
		return fmt.Errorf("line %d: nesting too deep (alias cycle?)", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("expected one document, got %d", len(n.Content))
		}
		return writeJSONNode(buf, n.Content[0], depth)
	case yaml.AliasNode:
		return writeJSONNode(buf, n.Alias, depth+1)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONNode(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			// Merge keys are YAML 1.1, not JSON-convertible by every tool: refuse them
			// rather than emit a "<<" property.
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: only plain scalar keys are supported", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONValue(buf, k.Value); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeJSONNode(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		// Decoding the scalar alone resolves its YAML type (string, int, float, bool, null).
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		return writeJSONValue(buf, v)
	}
	return fmt.Errorf("line %d: unsupported YAML node kind %d", n.Line, n.Kind)
}

func writeJSONValue(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // keep <, > and & readable in descriptions
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
	return nil
}
