package dashboard

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strconv"
)

// Field is one member of a JSON document as a page lists it: a key with a scalar value, or
// with the members of an object or array under it. Evidence details and the fields the
// control API gains later (a run's receipts, the last wall proof in status) are shown this
// way, with every string rendered like any other text on the page.
type Field struct {
	Key   string
	Value string
	Sub   []Field
}

// maxDepth bounds how deep a document is listed; deeper members are shown as their JSON.
const maxDepth = 6

// fieldsOf lists a JSON object's or array's members; nil for anything else or bad JSON.
func fieldsOf(raw json.RawMessage) []Field {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // amounts and counts exactly as sent
	if len(raw) == 0 || dec.Decode(&v) != nil {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil // more after the document: not one JSON value
	}
	f := toField("", v, 0)
	return f.Sub
}

func toField(key string, v any, depth int) Field {
	f := Field{Key: key}
	switch x := v.(type) {
	case map[string]any:
		if depth >= maxDepth {
			b, _ := json.Marshal(x)
			f.Value = string(b)
			return f
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		f.Sub = []Field{}
		for _, k := range keys {
			f.Sub = append(f.Sub, toField(k, x[k], depth+1))
		}
	case []any:
		if depth >= maxDepth {
			b, _ := json.Marshal(x)
			f.Value = string(b)
			return f
		}
		f.Sub = []Field{}
		for i, e := range x {
			f.Sub = append(f.Sub, toField(strconv.Itoa(i), e, depth+1))
		}
	case string:
		f.Value = x
	case json.Number:
		f.Value = x.String()
	case bool:
		f.Value = strconv.FormatBool(x)
	case nil:
		f.Value = "null"
	}
	return f
}

// member is one member of a JSON object, as raw JSON; nil when absent or not an object.
func member(raw json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	v := m[key]
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}
