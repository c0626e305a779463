package testkit

import (
	"context"
	"fmt"
	"reflect"
)

// NilContextCall is one method called by [CallWithNilContext]: its name,
// the error it returned and, when it panicked, the panic's value.
type NilContextCall struct {
	Method string
	Err    error
	Panic  any
}

// CallWithNilContext calls every exported method of v that takes a
// context.Context first and returns an error last, with a nil context and,
// for the other parameters, arg's value for their type (a zero value when
// arg is nil or returns an invalid Value). Methods for which skip (when not
// nil) is true are left out. A panic is recovered and reported in the call,
// with Err saying so, so a test sees every method rather than the first
// that panics.
func CallWithNilContext(v any, skip func(method string) bool, arg func(reflect.Type) reflect.Value) []NilContextCall {
	ctxType := reflect.TypeFor[context.Context]()
	errType := reflect.TypeFor[error]()
	rv := reflect.ValueOf(v)
	var calls []NilContextCall
	for i := range rv.NumMethod() {
		m, name := rv.Method(i), rv.Type().Method(i).Name
		ft := m.Type()
		if ft.NumIn() == 0 || ft.In(0) != ctxType || ft.NumOut() == 0 || ft.Out(ft.NumOut()-1) != errType {
			continue
		}
		if skip != nil && skip(name) {
			continue
		}
		args := []reflect.Value{reflect.Zero(ctxType)}
		for a := 1; a < ft.NumIn(); a++ {
			var val reflect.Value
			if arg != nil {
				val = arg(ft.In(a))
			}
			if !val.IsValid() {
				val = reflect.Zero(ft.In(a))
			}
			args = append(args, val)
		}
		call := NilContextCall{Method: name}
		func() {
			defer func() {
				if r := recover(); r != nil {
					call.Panic = r
					call.Err = fmt.Errorf("panic: %v", r)
				}
			}()
			var out []reflect.Value
			if ft.IsVariadic() {
				out = m.CallSlice(args)
			} else {
				out = m.Call(args)
			}
			call.Err, _ = out[len(out)-1].Interface().(error)
		}()
		calls = append(calls, call)
	}
	return calls
}
