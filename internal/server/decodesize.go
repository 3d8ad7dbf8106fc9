package server

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodedSize is the memory a decoded request holds beyond its frame: the
// request struct, every array, copied string and tagged-field entry.
// []byte fields alias the frame (kmsg does not copy them) and count for
// nothing. It walks the decoded request by reflection, so it knows every
// API without a line of per-API code, and skips fields that hold no
// memory of their own.
func decodedSize(req kmsg.Request) int64 {
	v := reflect.ValueOf(req)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	return int64(v.Elem().Type().Size()) + indirectSize(v.Elem())
}

var (
	tagsType = reflect.TypeOf(kmsg.Tags{})
	// holdsMemory caches, per type, whether a value of it can refer to
	// memory of its own (slices, strings, pointers, tags).
	holdsMemory sync.Map // reflect.Type -> bool
)

func refersToMemory(t reflect.Type) bool {
	if v, ok := holdsMemory.Load(t); ok {
		return v.(bool)
	}
	var r bool
	switch t.Kind() {
	case reflect.Slice, reflect.String, reflect.Pointer, reflect.Map, reflect.Interface:
		r = true
	case reflect.Array:
		r = refersToMemory(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if refersToMemory(t.Field(i).Type) {
				r = true
				break
			}
		}
	}
	holdsMemory.Store(t, r)
	return r
}

// indirectSize is the memory v refers to, not counting v itself.
func indirectSize(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			if v.CanAddr() && v.Addr().CanInterface() {
				return int64(v.Addr().Interface().(*kmsg.Tags).Len()) * tagCost
			}
			return 0
		}
		var n int64
		for i := range v.NumField() {
			if f := v.Field(i); refersToMemory(f.Type()) {
				n += indirectSize(f)
			}
		}
		return n
	case reflect.Slice:
		elem := v.Type().Elem()
		if elem.Kind() == reflect.Uint8 {
			return 0 // aliases the frame
		}
		n := int64(v.Cap()) * int64(elem.Size())
		if refersToMemory(elem) {
			for i := range v.Len() {
				n += indirectSize(v.Index(i))
			}
		}
		return n
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return int64(v.Type().Elem().Size()) + indirectSize(v.Elem())
	case reflect.Array:
		var n int64
		if refersToMemory(v.Type().Elem()) {
			for i := range v.Len() {
				n += indirectSize(v.Index(i))
			}
		}
		return n
	}
	return 0
}
