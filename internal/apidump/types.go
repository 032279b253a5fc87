package apidump

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"
)

// typ writes a type as Go source does, with these differences, each so
// that what cannot break a caller does not change a line: type
// parameters are $0, $1, ... by position; aliases are the types they
// stand for; an empty interface is any; parameter and result names are
// left out. Other packages' names are qualified by package name.
func (w *writer) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *writer) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case nil:
		b.WriteString("<nil>")
	case *types.Alias:
		w.writeType(b, types.Unalias(t))
	case *types.Basic:
		if t.Kind() == types.UnsafePointer {
			b.WriteString("unsafe.")
		}
		b.WriteString(t.Name())
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		w.writeChan(b, t)
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Struct:
		w.writeStruct(b, t)
	case *types.Interface:
		w.writeInterface(b, t)
	case *types.Union:
		for i := range t.Len() {
			term := t.Term(i)
			if i > 0 {
				b.WriteString(" | ")
			}
			if term.Tilde() {
				b.WriteByte('~')
			}
			w.writeType(b, term.Type())
		}
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && obj.Pkg() != w.pkg {
			b.WriteString(obj.Pkg().Name())
			b.WriteByte('.')
		}
		b.WriteString(obj.Name())
		if args := t.TypeArgs(); args.Len() > 0 {
			b.WriteByte('[')
			for i := range args.Len() {
				a := args.At(i)
				if i > 0 {
					b.WriteString(", ")
				}
				w.writeType(b, a)
			}
			b.WriteByte(']')
		}
	case *types.TypeParam:
		fmt.Fprintf(b, "$%d", t.Index())
	case *types.Tuple:
		w.writeTuple(b, t, false)
	default:
		b.WriteString(t.String())
	}
}

func (w *writer) writeChan(b *strings.Builder, t *types.Chan) {
	paren := false
	switch t.Dir() {
	case types.SendRecv:
		b.WriteString("chan ")
		// chan (<-chan T) is not chan<- chan T.
		if c, ok := types.Unalias(t.Elem()).(*types.Chan); ok && c.Dir() == types.RecvOnly {
			paren = true
		}
	case types.SendOnly:
		b.WriteString("chan<- ")
	case types.RecvOnly:
		b.WriteString("<-chan ")
	}
	if paren {
		b.WriteByte('(')
	}
	w.writeType(b, t.Elem())
	if paren {
		b.WriteByte(')')
	}
}

// writeStruct writes a struct literal with every field, unexported ones
// and tags included: all of them make the type's identity.
func (w *writer) writeStruct(b *strings.Builder, t *types.Struct) {
	b.WriteString("struct{")
	for i := range t.NumFields() {
		if i > 0 {
			b.WriteString("; ")
		}
		f := t.Field(i)
		if !f.Embedded() {
			b.WriteString(f.Name())
			b.WriteByte(' ')
		}
		w.writeType(b, f.Type())
		if tag := t.Tag(i); tag != "" {
			b.WriteByte(' ')
			b.WriteString(strconv.Quote(tag))
		}
	}
	b.WriteByte('}')
}

// writeInterface writes an interface literal: its embedded types (type
// terms of a constraint) in source order, then its methods by name. The
// implicit interface of a constraint written as a union ([T ~int | ~uint])
// is written as the union alone, as in source.
func (w *writer) writeInterface(b *strings.Builder, t *types.Interface) {
	if t.IsImplicit() && t.NumEmbeddeds() == 1 && t.NumExplicitMethods() == 0 {
		w.writeType(b, t.EmbeddedType(0))
		return
	}
	if t.NumEmbeddeds() == 0 && t.NumExplicitMethods() == 0 {
		b.WriteString("any")
		return
	}
	b.WriteString("interface{ ")
	n := 0
	for e := range t.EmbeddedTypes() {
		if n > 0 {
			b.WriteString("; ")
		}
		n++
		w.writeType(b, e)
	}
	for m := range t.ExplicitMethods() {
		if n > 0 {
			b.WriteString("; ")
		}
		n++
		b.WriteString(m.Name())
		b.WriteString(w.signature(m.Type().(*types.Signature)))
	}
	b.WriteString(" }")
}

// signature writes a function's parameters and results without names:
// "(int, ...string) (bool, error)".
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	w.writeTuple(&b, sig.Params(), sig.Variadic())
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteByte(' ')
		w.writeType(&b, res.At(0).Type())
	default:
		b.WriteByte(' ')
		w.writeTuple(&b, res, false)
	}
	return b.String()
}

func (w *writer) writeTuple(b *strings.Builder, t *types.Tuple, variadic bool) {
	b.WriteByte('(')
	for i := range t.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			if s, ok := types.Unalias(typ).(*types.Slice); ok {
				b.WriteString("...")
				typ = s.Elem()
			}
		}
		w.writeType(b, typ)
	}
	b.WriteByte(')')
}

// typeParams writes a type parameter list with its constraints:
// "[$0 comparable, $1 any]", or "" for none.
func (w *writer) typeParams(list *types.TypeParamList) string {
	if list.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range list.Len() {
		tp := list.At(i)
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d ", i)
		w.writeType(&b, tp.Constraint())
	}
	b.WriteByte(']')
	return b.String()
}
