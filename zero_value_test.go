package drover_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/seed40057009/drover"
)

// TestZeroValuesAnswerErrors: a Queue, Worker, FlowProducer or QueueEvents
// declared instead of made with its constructor is a caller's mistake that
// must come back as an error naming it, never a panic or a hang. Every
// exported method is called, with plausible arguments, on each zero value;
// a method that answers an error must wrap ErrInvalidOption (the constructor
// is named), ErrNoQueue or, for an argument it refuses first, ErrInvalidData. Before, Queue.Add, Queue.AddBulk,
// Queue.CancelJob, Queue.Clean, Worker.Start, FlowProducer.Add and
// QueueEvents.Next/Run panicked with a nil pointer dereference.
func TestZeroValuesAnswerErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []any{&drover.Queue{}, &drover.Worker{}, &drover.FlowProducer{}, &drover.QueueEvents{}} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			m := rv.Type().Method(i)
			t.Run(reflect.TypeOf(v).Elem().Name()+"."+m.Name, func(t *testing.T) {
				t.Parallel()
				fn := rv.Method(i)
				args := plausibleArgs(fn.Type())
				type answer struct {
					out   []reflect.Value
					panic any
				}
				done := make(chan answer, 1)
				go func() {
					defer func() {
						if r := recover(); r != nil {
							done <- answer{panic: r}
						}
					}()
					done <- answer{out: fn.Call(args)}
				}()
				var a answer
				select {
				case a = <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("the call hangs")
				}
				if a.panic != nil {
					t.Fatalf("panicked: %v", a.panic)
				}
				for _, o := range a.out {
					err, ok := o.Interface().(error)
					if !ok || err == nil {
						continue
					}
					if !errors.Is(err, drover.ErrInvalidOption) && !errors.Is(err, drover.ErrNoQueue) && !errors.Is(err, drover.ErrInvalidData) {
						t.Errorf("error %q wraps none of ErrInvalidOption, ErrNoQueue, ErrInvalidData", err)
					}
				}
			})
		}
	}
}

// plausibleArgs are arguments a caller might pass to a method of type ft
// (without its receiver): valid-looking values, so the call goes past its
// argument checks to the zero value's missing parts.
func plausibleArgs(ft reflect.Type) []reflect.Value {
	n := ft.NumIn()
	if ft.IsVariadic() {
		n--
	}
	args := make([]reflect.Value, n)
	for k := range args {
		in := ft.In(k)
		var v any
		switch in {
		case reflect.TypeFor[context.Context]():
			v = context.Background()
		case reflect.TypeFor[string]():
			v = "1"
		case reflect.TypeFor[int](), reflect.TypeFor[int64]():
			args[k] = reflect.ValueOf(1).Convert(in)
			continue
		case reflect.TypeFor[time.Duration]():
			v = time.Second
		case reflect.TypeFor[drover.JobState]():
			v = drover.StateFailed
		case reflect.TypeFor[[]drover.JobState]():
			v = []drover.JobState{drover.StateFailed}
		case reflect.TypeFor[[]string]():
			v = []string{"1"}
		case reflect.TypeFor[drover.FlowJob]():
			v = drover.FlowJob{Name: "x", QueueName: "q"}
		case reflect.TypeFor[[]drover.FlowJob]():
			v = []drover.FlowJob{{Name: "x", QueueName: "q"}}
		case reflect.TypeFor[[]drover.BulkJob]():
			v = []drover.BulkJob{{Name: "x"}}
		case reflect.TypeFor[drover.RepeatOptions]():
			v = drover.RepeatOptions{Every: time.Second}
		case reflect.TypeFor[func(drover.Event) error]():
			v = func(drover.Event) error { return nil }
		default:
			args[k] = reflect.Zero(in)
			continue
		}
		args[k] = reflect.ValueOf(v)
	}
	return args
}

// TestNilHandlesAnswerErrors: every exported method of a nil *Queue,
// *Worker, *FlowProducer, *QueueEvents, *Job or *Kinds (a handle whose
// constructor's or GetJob's error was dropped) returns an error wrapping
// ErrInvalidOption or ErrNoQueue, or a zero value, never a panic. Before,
// 51 of them panicked with a nil pointer dereference: every method of
// Worker, FlowProducer, QueueEvents and Job, and Queue.AddArgs, Close,
// Name and Prefix (the other Queue methods answered ErrNoQueue already).
func TestNilHandlesAnswerErrors(t *testing.T) {
	t.Parallel()
	for _, v := range []any{(*drover.Queue)(nil), (*drover.Worker)(nil), (*drover.FlowProducer)(nil),
		(*drover.QueueEvents)(nil), (*drover.Job)(nil), (*drover.Kinds)(nil)} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumMethod() {
			m := rv.Type().Method(i)
			t.Run(reflect.TypeOf(v).Elem().Name()+"."+m.Name, func(t *testing.T) {
				t.Parallel()
				fn := rv.Method(i)
				args := plausibleArgs(fn.Type())
				var out []reflect.Value
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("panicked: %v", r)
						}
					}()
					out = fn.Call(args)
				}()
				for _, o := range out {
					err, ok := o.Interface().(error)
					if !ok || err == nil {
						continue
					}
					if !errors.Is(err, drover.ErrInvalidOption) && !errors.Is(err, drover.ErrNoQueue) {
						t.Errorf("error %q wraps neither ErrInvalidOption nor ErrNoQueue", err)
					}
				}
			})
		}
	}
}
