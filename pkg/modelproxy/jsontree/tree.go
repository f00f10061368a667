// Package jsontree is the model proxy's JSON codec: a request body decoded into the tree
// encoding/json builds with UseNumber (map[string]any, []any, string, json.Number, bool, nil),
// and that tree written back byte for byte as encoding/json writes it, both in one pass
// without reflection. The fast paths only ever agree with encoding/json (differential tests
// and fuzz targets hold them to it); what they do not accept goes to encoding/json, which
// decides. A Scanner reads a text in place for a caller that needs only part of it.
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Object is a decoded JSON object; numbers stay json.Number so that re-encoding keeps them.
type Object = map[string]any

// Error says why a body is not exactly one JSON object. Detail names a position or a kind,
// never the body's bytes.
type Error struct {
	// NotObject: the body is one JSON value, but not an object.
	NotObject bool
	Detail    string
}

func (e *Error) Error() string { return e.Detail }

// Decode parses body as exactly one JSON object (E8). The tree holds no byte of body, so the
// caller may reuse it.
func Decode(body []byte) (Object, *Error) {
	if o, ok := fastDecode(body); ok {
		return o, nil
	}
	// Not a plain well-formed object to the fast parser: encoding/json decides, and names
	// what is wrong.
	return decodeObjectStd(body)
}

// decodeObjectStd is Decode by encoding/json alone.
func decodeObjectStd(body []byte) (Object, *Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{Detail: jsonErr(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &Error{Detail: "data after the JSON value"}
	}
	o, ok := v.(Object)
	if !ok {
		return nil, &Error{NotObject: true, Detail: "got " + jsonKind(v)}
	}
	return o, nil
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "empty or truncated body"
	}
	return "invalid JSON"
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// Int reads an integer value of the tree; ok is false for any other value.
func Int(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}
