package dashboard

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"anet.dev/anet/pkg/money"
)

func moneyOf(v int64) money.Micros { return money.Micros(v) }

// U1: a document's members are listed with their keys in order and their values as text,
// exactly (numbers as sent); too deep a document is cut, with the rest as JSON.
func TestFieldsOf(t *testing.T) {
	got := fieldsOf(json.RawMessage(`{"b":{"x":[1,"two",null,true]},"a":"t\u202ext","cost_micros":123456789012345678}`))
	want := `a=t` + "\u202e" + `xt;b={x={0=1;1=two;2=null;3=true}};cost_micros=123456789012345678`
	if s := flat(got); s != want {
		t.Fatalf("fieldsOf = %s, want %s", s, want)
	}
	deep := strings.Repeat(`{"k":`, 10) + `1` + strings.Repeat(`}`, 10)
	if s := flat(fieldsOf(json.RawMessage(deep))); !strings.Contains(s, `{"k":{"k":`) {
		t.Fatalf("a deep document = %s, want its depth cut to JSON", s)
	}
	for _, bad := range []string{"", "x", `"str"`, "3", "null", `{"a":`, `{}x`, `{} {}`} {
		if f := fieldsOf(json.RawMessage(bad)); f != nil {
			t.Errorf("fieldsOf(%q) = %v, want nil", bad, f)
		}
	}
}

func flat(fs []Field) string {
	var parts []string
	for _, f := range fs {
		if f.Sub != nil {
			parts = append(parts, f.Key+"={"+flat(f.Sub)+"}")
		} else {
			parts = append(parts, f.Key+"="+f.Value)
		}
	}
	return strings.Join(parts, ";")
}

// FuzzFieldsOf: for any bytes, fieldsOf does not fail, lists an object's keys sorted, once
// each, and lists nothing of what is not an object or array (U1: the evidence page and the
// status members it lists show text the node did not write).
func FuzzFieldsOf(f *testing.F) {
	for _, s := range []string{`{"b":{"x":[1,"two",null,true]},"a":"t"}`, `[1,2]`, `{}`, `"x"`, `{"a":`, `{}x`, strings.Repeat(`[`, 50)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := fieldsOf(b)
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) == nil && obj != nil {
			keys := make([]string, 0, len(obj))
			for k := range obj {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var listed []string
			for _, f := range got {
				listed = append(listed, f.Key)
			}
			if strings.Join(listed, "\x00") != strings.Join(keys, "\x00") {
				t.Fatalf("fieldsOf(%q) lists %q, want the keys %q", b, listed, keys)
			}
			return
		}
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) == nil && arr != nil {
			if len(got) != len(arr) {
				t.Fatalf("fieldsOf(%q) lists %d members, want %d", b, len(got), len(arr))
			}
			return
		}
		if got != nil {
			t.Fatalf("fieldsOf(%q) = %v for a document that is neither an object nor an array", b, got)
		}
	})
}
