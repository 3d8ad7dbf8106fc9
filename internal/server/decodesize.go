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
	// plans caches, per type, what a walk must look at (see typePlan).
	plans sync.Map // reflect.Type -> *typePlan
)

// tagsMap is true when kmsg.Tags is one map, as in kmsg v1.15: its length
// is then read straight from the field, which is several times cheaper
// than calling Tags.Len through reflection on every struct of an array.
var tagsMap = tagsType.NumField() == 1 && tagsType.Field(0).Type.Kind() == reflect.Map

func tagsLen(v reflect.Value) int {
	if tagsMap {
		return v.Field(0).Len()
	}
	if v.CanAddr() && v.Addr().CanInterface() {
		return v.Addr().Interface().(*kmsg.Tags).Len()
	}
	return 0
}

// typePlan says whether values of a type can refer to memory of their own
// (slices, strings, pointers, tags) and, for a struct, which fields can.
type typePlan struct {
	refers bool
	fields []int
}

func planFor(t reflect.Type) *typePlan {
	if p, ok := plans.Load(t); ok {
		return p.(*typePlan)
	}
	p := &typePlan{}
	switch t.Kind() {
	case reflect.Slice, reflect.String, reflect.Pointer, reflect.Map, reflect.Interface:
		p.refers = true
	case reflect.Array:
		p.refers = planFor(t.Elem()).refers
	case reflect.Struct:
		for i := range t.NumField() {
			if planFor(t.Field(i).Type).refers {
				p.fields = append(p.fields, i)
			}
		}
		p.refers = len(p.fields) > 0
	}
	plans.Store(t, p)
	return p
}

// indirectSize is the memory v refers to, not counting v itself.
func indirectSize(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		if t == tagsType {
			return int64(tagsLen(v)) * tagCost
		}
		var n int64
		for _, i := range planFor(t).fields {
			n += indirectSize(v.Field(i))
		}
		return n
	case reflect.Slice:
		elem := v.Type().Elem()
		if elem.Kind() == reflect.Uint8 {
			return 0 // aliases the frame
		}
		n := int64(v.Cap()) * int64(elem.Size())
		if planFor(elem).refers {
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
		if planFor(v.Type().Elem()).refers {
			for i := range v.Len() {
				n += indirectSize(v.Index(i))
			}
		}
		return n
	}
	return 0
}
