package statedump

import (
	"fmt"
	"sort"
)

// Diff lists the differences between two snapshots, one human-readable line
// each, in key name order; nil when they are equal. Key names are compared
// relative to each snapshot's prefix, so snapshots taken under different
// prefixes compare. Normalize both first to ignore run-specific values.
func Diff(a, b *Snapshot) []string {
	var out []string
	names := map[string]bool{}
	for n := range a.Keys {
		names[n] = true
	}
	for n := range b.Keys {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		ka, kb := a.Keys[name], b.Keys[name]
		switch {
		case kb == nil:
			out = append(out, fmt.Sprintf("%s: only in a (%s)", name, ka.Type))
		case ka == nil:
			out = append(out, fmt.Sprintf("%s: only in b (%s)", name, kb.Type))
		case ka.Type != kb.Type:
			out = append(out, fmt.Sprintf("%s: type %s in a, %s in b", name, ka.Type, kb.Type))
		default:
			out = append(out, diffKey(name, ka, kb)...)
		}
	}
	return out
}

func diffKey(name string, a, b *Key) []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, name+": "+fmt.Sprintf(format, args...))
	}
	if a.TTL != b.TTL {
		add("ttl %v in a, %v in b", a.TTL, b.TTL)
	}
	switch a.Type {
	case TypeString:
		if a.String != b.String {
			add("a=%q b=%q", a.String, b.String)
		}
	case TypeList:
		diffSeq(add, "list", a.List, b.List)
	case TypeSet:
		onlyA, onlyB := setDiff(a.Set, b.Set)
		for _, m := range onlyA {
			add("member %q only in a", m)
		}
		for _, m := range onlyB {
			add("member %q only in b", m)
		}
	case TypeZSet:
		fa := make([]string, len(a.ZSet))
		fb := make([]string, len(b.ZSet))
		for i, z := range a.ZSet {
			fa[i] = fmt.Sprintf("%q@%s", z.Member, z.Score)
		}
		for i, z := range b.ZSet {
			fb[i] = fmt.Sprintf("%q@%s", z.Member, z.Score)
		}
		diffSeq(add, "zset", fa, fb)
	case TypeHash:
		fields := map[string]bool{}
		for f := range a.Hash {
			fields[f] = true
		}
		for f := range b.Hash {
			fields[f] = true
		}
		sorted := make([]string, 0, len(fields))
		for f := range fields {
			sorted = append(sorted, f)
		}
		sort.Strings(sorted)
		for _, f := range sorted {
			va, inA := a.Hash[f]
			vb, inB := b.Hash[f]
			switch {
			case !inB:
				add("field %s only in a (%q)", f, va)
			case !inA:
				add("field %s only in b (%q)", f, vb)
			case va != vb:
				add("field %s: a=%q b=%q", f, va, vb)
			}
		}
	case TypeStream:
		fa := make([]string, len(a.Stream))
		fb := make([]string, len(b.Stream))
		for i, e := range a.Stream {
			fa[i] = e.ID + " " + formatFields(e.Fields)
		}
		for i, e := range b.Stream {
			fb[i] = e.ID + " " + formatFields(e.Fields)
		}
		diffSeq(add, "stream", fa, fb)
	}
	return out
}

// diffSeq reports a length difference and each differing position.
func diffSeq(add func(string, ...any), what string, a, b []string) {
	if len(a) != len(b) {
		add("%s length %d in a, %d in b", what, len(a), len(b))
	}
	for i := 0; i < max(len(a), len(b)); i++ {
		switch {
		case i >= len(a):
			add("[%d] only in b: %s", i, quoteIfPlain(what, b[i]))
		case i >= len(b):
			add("[%d] only in a: %s", i, quoteIfPlain(what, a[i]))
		case a[i] != b[i]:
			add("[%d] a=%s b=%s", i, quoteIfPlain(what, a[i]), quoteIfPlain(what, b[i]))
		}
	}
}

func quoteIfPlain(what, s string) string {
	if what == "list" {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func setDiff(a, b []string) (onlyA, onlyB []string) {
	inA := make(map[string]bool, len(a))
	inB := make(map[string]bool, len(b))
	for _, m := range a {
		inA[m] = true
	}
	for _, m := range b {
		inB[m] = true
	}
	for _, m := range a {
		if !inB[m] {
			onlyA = append(onlyA, m)
		}
	}
	for _, m := range b {
		if !inA[m] {
			onlyB = append(onlyB, m)
		}
	}
	return onlyA, onlyB
}
