package web

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// OpenAPIDoc is the OpenAPI 3.1 document of every route. It is kept by
// hand; openapi_test.go proves that it names exactly the routes the server
// registers and that its examples are what the handlers answer.
//
//go:embed openapi.json
var OpenAPIDoc []byte

// OpenAPISchema returns the component schema name of the OpenAPI document
// as a self-contained JSON Schema: every "$ref" to another component is
// replaced by that component. The MCP tools use it as their output schema.
// It panics on a broken document, which the tests would catch first.
func OpenAPISchema(name string) json.RawMessage {
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPIDoc, &doc); err != nil {
		panic(fmt.Sprintf("serve: openapi.json is not JSON: %v", err))
	}
	schemas := doc.Components.Schemas
	var inline func(v any, depth int) any
	inline = func(v any, depth int) any {
		if depth > 16 {
			panic("serve: openapi.json schemas refer to each other in a loop")
		}
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				target, ok := schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
				if !ok {
					panic("serve: openapi.json has a dangling $ref " + ref)
				}
				return inline(target, depth+1)
			}
			out := make(map[string]any, len(v))
			for k, x := range v {
				out[k] = inline(x, depth+1)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = inline(x, depth+1)
			}
			return out
		}
		return v
	}
	s, ok := schemas[name]
	if !ok {
		panic("serve: openapi.json has no schema " + name)
	}
	out, err := json.Marshal(inline(s, 0))
	if err != nil {
		panic(err)
	}
	return out
}
