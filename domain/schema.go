package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// An options schema is compiled once from an operation's options struct (see
// OperationSpec for the tags). The same compiled schema renders the JSON schema shown to
// clients and checks what clients send, so the two cannot disagree.

// schemaNode is one compiled value of an options schema.
type schemaNode struct {
	typ         string // string, integer, number, boolean, array, object
	description string
	enum        []string // allowed values, as JSON text of the value ("png", 90)
	def         any      // default, already of the JSON type
	min, max    *float64
	minItems    *int
	maxItems    *int
	maxLength   *int
	items       *schemaNode
	props       []*schemaProp // objects, in field order
}

type schemaProp struct {
	name     string
	node     *schemaNode
	required bool
}

// maxOptionString bounds a string option without its own maxLength.
const maxOptionString = 1000

// maxOptionItems bounds an array option without its own maxItems.
const maxOptionItems = 1000

// compileOptions compiles the options struct v (a struct value or pointer to one).
func compileOptions(v any) (*schemaNode, error) {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("options must be a struct, not %s", t)
	}
	return compileType(t, "", "")
}

func compileType(t reflect.Type, doc, tag string) (*schemaNode, error) {
	n := &schemaNode{description: doc}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		n.typ = "string"
	case reflect.Bool:
		n.typ = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.typ = "integer"
	case reflect.Float32, reflect.Float64:
		n.typ = "number"
	case reflect.Slice:
		n.typ = "array"
		items, err := compileType(t.Elem(), "", "")
		if err != nil {
			return nil, err
		}
		n.items = items
	case reflect.Struct:
		n.typ = "object"
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				return nil, fmt.Errorf("field %s.%s has no json name", t.Name(), f.Name)
			}
			pn, err := compileType(f.Type, f.Tag.Get("doc"), f.Tag.Get("schema"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if pn.description == "" {
				return nil, fmt.Errorf("option %s has no doc tag", name)
			}
			p := &schemaProp{name: name, node: pn}
			p.required = slices.Contains(strings.Split(f.Tag.Get("schema"), ","), "required")
			n.props = append(n.props, p)
		}
	default:
		return nil, fmt.Errorf("unsupported option type %s", t)
	}
	if err := n.applyTag(tag); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *schemaNode) applyTag(tag string) error {
	if tag == "" {
		return nil
	}
	for _, part := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(part, "=")
		num := func() (*float64, error) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("schema %s=%q is not a number", k, v)
			}
			return &f, nil
		}
		count := func() (*int, error) {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return nil, fmt.Errorf("schema %s=%q is not a count", k, v)
			}
			return &i, nil
		}
		var err error
		switch k {
		case "required":
		case "enum":
			// On a list, the enum is its items'.
			target := n
			if n.typ == "array" {
				target = n.items
			}
			target.enum = strings.Split(v, "|")
			if target.typ == "string" {
				for i, e := range target.enum {
					target.enum[i] = strconv.Quote(e)
				}
			}
		case "default":
			n.def, err = n.parseDefault(v)
		case "min":
			n.min, err = num()
		case "max":
			n.max, err = num()
		case "minItems":
			n.minItems, err = count()
		case "maxItems":
			n.maxItems, err = count()
		case "maxLength":
			n.maxLength, err = count()
		default:
			return fmt.Errorf("unknown schema tag %q", k)
		}
		if err != nil {
			return err
		}
	}
	if n.def != nil {
		if _, err := n.check("default", jsonValue(n.def)); err != nil {
			return fmt.Errorf("default %v does not pass its own schema: %v", n.def, err)
		}
	}
	return nil
}

func (n *schemaNode) parseDefault(v string) (any, error) {
	switch n.typ {
	case "string":
		return v, nil
	case "boolean":
		return strconv.ParseBool(v)
	case "integer":
		return strconv.ParseInt(v, 10, 64)
	case "number":
		return strconv.ParseFloat(v, 64)
	case "array":
		if v == "" {
			return []any{}, nil
		}
		var out []any
		for _, s := range strings.Split(v, "|") {
			d, err := n.items.parseDefault(s)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	return nil, fmt.Errorf("no default for a %s", n.typ)
}

// jsonValue turns a Go default into what decoding JSON with UseNumber gives.
func jsonValue(v any) any {
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	_ = dec.Decode(&out)
	return out
}

// JSONSchema renders the node as a JSON schema object.
func (n *schemaNode) JSONSchema() map[string]any {
	s := map[string]any{"type": n.typ}
	if n.description != "" {
		s["description"] = n.description
	}
	if len(n.enum) > 0 {
		vals := make([]any, len(n.enum))
		for i, e := range n.enum {
			_ = json.Unmarshal([]byte(e), &vals[i])
		}
		s["enum"] = vals
	}
	if n.def != nil {
		s["default"] = n.def
	}
	if n.min != nil {
		s["minimum"] = *n.min
	}
	if n.max != nil {
		s["maximum"] = *n.max
	}
	if n.minItems != nil {
		s["minItems"] = *n.minItems
	}
	if n.maxItems != nil {
		s["maxItems"] = *n.maxItems
	}
	if n.maxLength != nil {
		s["maxLength"] = *n.maxLength
	}
	if n.items != nil {
		s["items"] = n.items.JSONSchema()
	}
	if n.typ == "object" {
		props := map[string]any{}
		var req []string
		for _, p := range n.props {
			props[p.name] = p.node.JSONSchema()
			if p.required {
				req = append(req, p.name)
			}
		}
		s["properties"] = props
		s["additionalProperties"] = false
		if len(req) > 0 {
			s["required"] = req
		}
	}
	return s
}

// check validates v (decoded with UseNumber) against the node and returns its canonical
// form, defaults filled in. param names v in errors.
func (n *schemaNode) check(param string, v any) (any, error) {
	bad := func(format string, args ...any) error { return InvalidParam(param, format, args...) }
	switch n.typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, bad("%s must be a string", param)
		}
		limit := maxOptionString
		if n.maxLength != nil {
			limit = *n.maxLength
		}
		if len([]rune(s)) > limit {
			return nil, bad("%s must be at most %d characters", param, limit)
		}
		if err := n.checkEnum(param, strconv.Quote(s)); err != nil {
			return nil, err
		}
		return s, nil
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, bad("%s must be true or false", param)
		}
		return b, nil
	case "integer", "number":
		num, ok := v.(json.Number)
		if !ok {
			return nil, bad("%s must be a number", param)
		}
		f, err := num.Float64()
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, bad("%s must be a number", param)
		}
		if n.typ == "integer" && (f != math.Trunc(f) || math.Abs(f) > 1<<53) {
			return nil, bad("%s must be an integer", param)
		}
		if n.min != nil && f < *n.min || n.max != nil && f > *n.max {
			return nil, bad("%s must be between %s and %s", param, bound(n.min, "-∞"), bound(n.max, "∞"))
		}
		if n.typ == "integer" {
			i := int64(f)
			if err := n.checkEnum(param, strconv.FormatInt(i, 10)); err != nil {
				return nil, err
			}
			return i, nil
		}
		return f, nil
	case "array":
		items, ok := v.([]any)
		if !ok {
			return nil, bad("%s must be an array", param)
		}
		limit := maxOptionItems
		if n.maxItems != nil {
			limit = *n.maxItems
		}
		if len(items) > limit {
			return nil, bad("%s takes at most %d items", param, limit)
		}
		if n.minItems != nil && len(items) < *n.minItems {
			return nil, bad("%s takes at least %d items", param, *n.minItems)
		}
		out := make([]any, len(items))
		for i, it := range items {
			c, err := n.items.check(fmt.Sprintf("%s[%d]", param, i), it)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad("%s must be an object", param)
		}
		return n.checkObject(param, obj)
	}
	return nil, fmt.Errorf("schema: unknown type %s", n.typ)
}

func (n *schemaNode) checkObject(param string, obj map[string]any) (map[string]any, error) {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]any, len(n.props))
	for _, k := range names {
		p := n.prop(k)
		if p == nil {
			k = Clip(k, MaxQuotedChars)
			if len(n.props) == 0 {
				return nil, InvalidParam(param+"."+k, "%s takes no options", param)
			}
			return nil, InvalidParam(param+"."+k, "unknown option %q (known: %s)", k, strings.Join(n.propNames(), ", "))
		}
		c, err := p.node.check(param+"."+k, obj[k])
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	for _, p := range n.props {
		if _, set := out[p.name]; set {
			continue
		}
		if p.required {
			return nil, InvalidParam(param+"."+p.name, "%s.%s is required", param, p.name)
		}
		if p.node.def != nil {
			out[p.name] = p.node.def
		}
	}
	return out, nil
}

func (n *schemaNode) checkEnum(param, text string) error {
	if len(n.enum) == 0 || slices.Contains(n.enum, text) {
		return nil
	}
	shown := make([]string, len(n.enum))
	for i, e := range n.enum {
		shown[i] = strings.Trim(e, `"`)
	}
	return InvalidParam(param, "%s must be one of %s", param, strings.Join(shown, ", "))
}

func (n *schemaNode) prop(name string) *schemaProp {
	for _, p := range n.props {
		if p.name == name {
			return p
		}
	}
	return nil
}

func (n *schemaNode) propNames() []string {
	out := make([]string, len(n.props))
	for i, p := range n.props {
		out[i] = p.name
	}
	return out
}

func bound(p *float64, none string) string {
	if p == nil {
		return none
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

// optionsCodec validates the options of one operation: the compiled schema, and the
// struct type whose Validate method (when it has one) checks rules across fields.
type optionsCodec struct {
	schema *schemaNode
	typ    reflect.Type // nil: the operation takes no options
}

func newOptionsCodec(v any) (*optionsCodec, error) {
	if v == nil {
		return &optionsCodec{schema: &schemaNode{typ: "object"}}, nil
	}
	s, err := compileOptions(v)
	if err != nil {
		return nil, err
	}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return &optionsCodec{schema: s, typ: t}, nil
}

// validator is what an options struct implements for rules across fields.
type validator interface{ Validate() error }

// canonical checks raw options (absent, null or a JSON object) and returns them as
// canonical JSON with defaults filled in. Codes: invalid_request with param options.NAME.
func (c *optionsCodec) canonical(raw json.RawMessage) (json.RawMessage, error) {
	canon, _, err := c.decode(raw)
	return canon, err
}

// decode checks raw options as canonical does and returns them also as a value of the
// operation's options type (nil when it takes none), the value its engine runs with.
func (c *optionsCodec) decode(raw json.RawMessage) (json.RawMessage, any, error) {
	obj := map[string]any{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && string(t) != "null" {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || dec.More() {
			return nil, nil, InvalidParam("options", "options must be a JSON object")
		}
	}
	out, err := c.schema.checkObject("options", obj)
	if err != nil {
		return nil, nil, err
	}
	canon, err := json.Marshal(out)
	if err != nil {
		return nil, nil, err
	}
	if c.typ != nil {
		v := reflect.New(c.typ)
		if err := json.Unmarshal(canon, v.Interface()); err != nil {
			return nil, nil, InvalidParam("options", "options do not fit the operation: %v", err)
		}
		if val, ok := v.Elem().Interface().(validator); ok {
			if err := val.Validate(); err != nil {
				return nil, nil, err
			}
		} else if val, ok := v.Interface().(validator); ok {
			if err := val.Validate(); err != nil {
				return nil, nil, err
			}
		}
		return canon, v.Elem().Interface(), nil
	}
	return canon, nil, nil
}
