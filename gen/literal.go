package gen

import "github.com/dave/jennifer/jen"

// This file writes keyed composite literals in the order their fields are
// given: declaration order, as protoc-gen-go follows the .proto, where
// jennifer's Dict would sort the keys by their rendered code.

// field is one field of a keyed composite literal.
type field struct {
	name  string
	value jen.Code
}

// keyed renders the braces and fields of a keyed composite literal, one
// field a line when there are several, in the order given.
func keyed(fields ...field) *jen.Statement {
	items := make([]jen.Code, len(fields))
	for i, f := range fields {
		items[i] = jen.Id(f.name).Op(":").Add(f.value)
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: len(fields) > 1}, items...)
}
