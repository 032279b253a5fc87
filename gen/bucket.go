package gen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// bucketFile holds everything generated for one bucket: per kind its key,
// parser, event and runtime description; then the scopes, handlers,
// watcher and client of the bucket.
func bucketFile(s *schema.Schema, b *schema.Bucket) *jen.File {
	f := newFile(s)
	for _, k := range b.Kinds {
		emitKey(f, b, k)
		emitKind(f, b, k)
	}
	emitSpec(f, s, b)
	emitScopes(f, b)
	emitHandlers(f, b)
	emitWatcher(f, b)
	emitSetScopes(f, b)
	emitAddHandlers(f, b)
	emitEvents(f, b)
	emitCheckpoint(f, b)
	emitClient(f, b)
	emitBucketConfig(f, b)
	return f
}

// emitKey writes the key struct, its String method, its parser and the
// compiled template.
func emitKey(f *jen.File, b *schema.Bucket, k *schema.Kind) {
	n := k.Names
	t := k.Template
	f.Comment(wrap(fmt.Sprintf("%s is the key of %s %s entry of bucket %s: %q. Its fields are key tokens: "+
		"non-empty, of the characters [-/_=A-Za-z0-9].", n.Key, article(k.GoName), k.GoName, b.Name, t.Raw)))
	f.Type().Id(n.Key).StructFunc(func(g *jen.Group) {
		for _, p := range t.Params {
			g.Id(p.GoName).Add(paramType(p)).Comment("{" + p.Name + "}")
		}
	})
	f.Line()

	f.Comment(wrap(fmt.Sprintf("String returns the key %s formats to. %s(k.String()) returns k "+
		"for every valid key.", n.Key, n.Parse)))
	f.Func().Params(jen.Id("k").Id(n.Key)).Id("String").Params().String().Block(
		jen.Return(keyConcat(t)),
	)
	f.Line()

	f.Comment(wrap(fmt.Sprintf("%s parses a key of the form %q. The error, a *kvwatch.KeyMismatchError "+
		"or *kvwatch.ParamError, says why a key does not match.", n.Parse, t.Raw)))
	f.Func().Id(n.Parse).Params(jen.Id("key").String()).Params(jen.Id(n.Key), jen.Error()).BlockFunc(func(g *jen.Group) {
		if len(t.Params) == 0 {
			g.If(jen.Err().Op(":=").Id(n.Template).Dot("Split").Call(jen.Id("key"), jen.Nil()), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Id(n.Key).Values(), jen.Err()),
			)
			g.Return(jen.Id(n.Key).Values(), jen.Nil())
			return
		}
		g.Var().Id("p").Index(jen.Lit(len(t.Params))).String()
		g.If(jen.Err().Op(":=").Id(n.Template).Dot("Split").Call(jen.Id("key"), jen.Id("p").Index(jen.Empty().Op(":"))), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Id(n.Key).Values(), jen.Err()),
		)
		g.Var().Id("k").Id(n.Key)
		typed := false
		for i, p := range t.Params {
			if p.Type == schema.ParamString {
				g.Id("k").Dot(p.GoName).Op("=").Id("p").Index(jen.Lit(i))
				continue
			}
			if !typed {
				g.Var().Err().Error()
				typed = true
			}
			parse := map[schema.ParamType]string{schema.ParamInt: "ParseIntParam", schema.ParamUint: "ParseUintParam"}[p.Type]
			g.If(
				jen.List(jen.Id("k").Dot(p.GoName), jen.Err()).Op("=").Add(rt(parse)).Call(jen.Id("p").Index(jen.Lit(i))),
				jen.Err().Op("!=").Nil(),
			).Block(
				jen.Return(jen.Id(n.Key).Values(), jen.Op("&").Add(rt("ParamError")).Add(keyed(
					field{"Key", jen.Id("key")}, field{"Param", jen.Lit(p.Name)}, field{"Err", jen.Err()},
				))),
			)
		}
		g.Return(jen.Id("k"), jen.Nil())
	})
	f.Line()

	f.Comment(wrap(fmt.Sprintf("%s is the compiled key template of %s entries.", n.Template, k.GoName)))
	f.Var().Id(n.Template).Op("=").Add(rt("MustTemplate")).Call(jen.Lit(t.Raw))
	f.Line()
}

// paramType is the Go type of a key parameter.
func paramType(p *schema.Param) jen.Code {
	switch p.Type {
	case schema.ParamInt:
		return jen.Int64()
	case schema.ParamUint:
		return jen.Uint64()
	}
	return jen.String()
}

// paramString formats the parameter value v as a key token.
func paramString(p *schema.Param, v jen.Code) jen.Code {
	switch p.Type {
	case schema.ParamInt:
		return jen.Qual("strconv", "FormatInt").Call(v, jen.Lit(10))
	case schema.ParamUint:
		return jen.Qual("strconv", "FormatUint").Call(v, jen.Lit(10))
	}
	return v
}

// keyConcat builds the String expression: literals merged with their
// separators, parameters formatted ("vpc." + k.VPC + ".route." + k.RouteID).
func keyConcat(t *schema.Template) jen.Code {
	var parts []jen.Code
	var lit strings.Builder
	for i, tok := range t.Tokens {
		if i > 0 {
			lit.WriteByte('.')
		}
		if tok.Param == nil {
			lit.WriteString(tok.Literal)
			continue
		}
		if lit.Len() > 0 {
			parts = append(parts, jen.Lit(lit.String()))
			lit.Reset()
		}
		parts = append(parts, paramString(tok.Param, jen.Id("k").Dot(tok.Param.GoName)))
	}
	if lit.Len() > 0 {
		parts = append(parts, jen.Lit(lit.String()))
	}
	expr := jen.Add(parts[0])
	for _, p := range parts[1:] {
		expr = expr.Op("+").Add(p)
	}
	return expr
}

// emitKind writes the event alias and the runtime description of a kind.
func emitKind(f *jen.File, b *schema.Bucket, k *schema.Kind) {
	n := k.Names
	value := goType(k.Value)
	doc := fmt.Sprintf("%s is a change of %s %s entry (see kvwatch.Event for ordering and ownership).", n.Event, article(k.GoName), k.GoName)
	if k.Doc != "" {
		doc += "\n\n" + k.GoName + " entries: " + k.Doc
	}
	f.Comment(wrap(doc))
	f.Type().Id(n.Event).Op("=").Add(rt("Event")).Types(jen.Id(n.Key), value)
	f.Line()
	f.Comment(wrap(fmt.Sprintf("%s describes %s entries to the runtime.", n.KindVar, k.GoName)))
	fields := []field{
		{"Name", jen.Lit(k.GoName)},
		{"Bucket", jen.Lit(b.Name)},
		{"Key", jen.Id(n.Template)},
		{"ParseKey", jen.Id(n.Parse)},
		{"FormatKey", jen.Id(n.Key).Dot("String")},
	}
	if params := k.Template.Params; len(params) > 0 {
		var values []jen.Code
		for _, p := range params {
			values = append(values, paramString(p, jen.Id("k").Dot(p.GoName)))
		}
		fields = append(fields, field{"KeyParams", jen.Func().Params(jen.Id("k").Id(n.Key)).Index().String().Block(
			jen.Return(jen.Index().String().Values(values...)))})
	}
	fields = append(fields, field{"Codec", codec(k)})
	if clone := kindClone(k); clone != nil {
		fields = append(fields, field{"Clone", clone})
	}
	if len(k.Indexes) > 0 {
		var items []jen.Code
		for _, ix := range k.Indexes {
			items = append(items, keyed(
				field{"Name", jen.Lit(ix.Name)},
				field{"Value", jen.Func().Params(jen.Id("v").Add(value)).Any().Block(jen.Return(jen.Id("v").Dot(ix.Field.GoName)))},
			))
		}
		fields = append(fields, field{"Indexes", jen.Index().Add(rt("Index")).Types(value).Custom(
			jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, items...)})
	}
	f.Var().Id(n.KindVar).Op("=").Add(rt("Kind")).Types(jen.Id(n.Key), value).Add(keyed(fields...))
	f.Line()
}

// emitSpec writes the runtime description of the bucket: its name,
// scopes, config, and the schema it comes from (the schema's revision,
// left out when it declares none, and the bucket's fingerprint), which
// CreateOrUpdate records in the bucket and watchers compare with that
// record.
func emitSpec(f *jen.File, s *schema.Schema, b *schema.Bucket) {
	f.Comment(wrap(fmt.Sprintf("%s describes bucket %s to the runtime.", b.Names.Spec, b.Name)))
	id := []field{{"Fingerprint", jen.Lit(b.Fingerprint())}}
	if s.Revision != 0 {
		id = append([]field{{"Revision", jen.Lit(s.Revision)}}, id...)
	}
	f.Var().Id(b.Names.Spec).Op("=").Add(rt("BucketSpec")).Add(keyed(slices.Concat([]field{
		{"Bucket", jen.Lit(b.Name)},
		{"Scopes", jen.Index().Add(rt("ScopeSpec")).ValuesFunc(func(g *jen.Group) {
			for _, s := range b.Scopes {
				g.Add(keyed(field{"Name", jen.Lit(s.GoName)}, field{"Prefix", jen.Lit(s.Prefix.Raw)}))
			}
		})},
	}, specConfig(b), []field{{"Schema", rt("SchemaID").Add(keyed(id...))}})...))
	f.Line()
}
