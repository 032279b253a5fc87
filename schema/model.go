package schema

// This file is the resolved model the generator consumes: every name
// checked, every reference resolved, everything in a fixed order (types by
// name; buckets, kinds, scopes and fields as written). The model is
// read-only once Load returns it.

// Schema is a loaded, valid schema.
type Schema struct {
	// Package is the Go package name of the generated code.
	Package string
	// Buckets in the order written.
	Buckets []*Bucket
	// Types are the value types declared under "types", sorted by name.
	Types []*Type
	// Imports are the packages of the external types, sorted by path.
	Imports []*Import
	// Revision is the schema's revision (revision:), 0 when it declares
	// none. Its author raises it with each change, so that a bucket and a
	// watcher can tell which of two schemas is the newer.
	Revision int
	// Accepts are the breaking changes accepted on purpose (compat:
	// accept:), in the order written.
	Accepts []*Accept
}

// Import is a package of external types and the name the generated code
// refers to it by: never a name generated code declares inside a function
// (see IsLocalName), the name of another package it imports, or a
// predeclared identifier. Value "[]example.com/x/v.T" is imported as vpkg,
// for generated code declares v.
type Import struct {
	Path string
	Name string
	// Explicit is set when the import must be written with Name: outside
	// the standard library, a package's own name is not known from its
	// path.
	Explicit bool
}

// Bucket is one KV bucket.
type Bucket struct {
	Name   string   // NATS bucket name
	GoName string   // exported Go name, e.g. "Network"
	Doc    string   // doc comment text, may be empty
	Kinds  []*Kind  // in the order written
	Scopes []*Scope // in the order written
	// Config is the stream configuration the schema declares under
	// config:, nil when it declares none (see BucketConfig).
	Config *BucketConfig
	Names  BucketNames
	Pos    Pos
}

// BucketNames are the package-level Go names generated for a bucket.
type BucketNames struct {
	Scopes     string // NetworkScopes: what a watcher watches
	Handlers   string // NetworkHandlers: the event handlers
	Watcher    string // NetworkWatcher: the typed watcher
	Watch      string // WatchNetwork: starts a watcher
	Client     string // NetworkBucket: typed reads and writes
	NewClient  string // NewNetworkBucket
	OpenClient string // OpenNetworkBucket
	Batch      string // NetworkBatch: an atomic batch of writes
	Checkpoint string // NetworkCheckpoint: a watcher's state, to resume from
	Spec       string // kvwNetworkSpec: the runtime's bucket description
	// CreateOrUpdate is CreateOrUpdateNetworkBucket: creates the bucket
	// with its Config, or updates it to it.
	CreateOrUpdate string
	File           string // network.kvwatch.go: the generated file
}

// Kind is one kind of entry of a bucket.
type Kind struct {
	GoName   string // exported Go name, e.g. "Route"
	Doc      string
	Template *Template
	Value    *TypeRef
	Codec    Codec
	Indexes  []*Index // on its cache, in the order written
	Names    KindNames
	Pos      Pos
}

// KindNames are the Go names generated for a kind.
type KindNames struct {
	Key     string // RouteKey: the typed key
	Parse   string // ParseRouteKey
	Event   string // RouteEvent
	Handler string // OnRoute: field of the bucket's Handlers
	Cache   string // RouteCache: method of the bucket's Watcher
	// CacheType is RouteCache, the type of the cache with the kind's
	// indexes as methods; "" when the kind declares none (the method then
	// returns kvwatch.Cache).
	CacheType string
	// BindingField is the unexported field of the bucket's Watcher
	// holding the kind's binding, its cache and handlers (bindRoute).
	BindingField string
	// Methods of the bucket's client, named like jetstream.KeyValue's:
	// PutRoute, CreateRoute, UpdateRoute, GetRoute, GetRouteRevision,
	// DeleteRoute, PurgeRoute, RouteHistory, ListRoute, RouteKeys and
	// ModifyRoute.
	Put, Create, Update, Get, GetRevision, Delete, Purge string
	History, List, Keys, Modify                          string
	KindVar                                              string // kvwNetworkRouteKind: the runtime's kind description
	Template                                             string // kvwNetworkRouteTemplate: the compiled key template
	// CheckpointField is the field of the bucket's Checkpoint holding the
	// kind's entries: the kind's Go name, or with "_" appended where that
	// is a member the generator defines (a kind Revision).
	CheckpointField string
}

// Codec is how values are stored.
type Codec string

// The codecs.
const (
	CodecJSON   Codec = "json"
	CodecString Codec = "string"
	CodecBytes  Codec = "bytes"
	CodecText   Codec = "text"
	CodecBinary Codec = "binary"
)

// Template is a key template: tokens separated by '.'.
type Template struct {
	Raw    string
	Tokens []Token
	Params []*Param // in key order
	Pos    Pos
}

// Token is a literal (Param nil) or a parameter.
type Token struct {
	Literal string
	Param   *Param
}

// Param is a parameter of a key template or scope prefix.
type Param struct {
	Name   string    // as written, e.g. "route_id"
	GoName string    // exported field name, e.g. "RouteID"
	Type   ParamType // string, int or uint

	explicitType bool // written {name:type}, not {name}
}

// ParamType is the type of a key parameter.
type ParamType string

// The parameter types.
const (
	ParamString ParamType = "string"
	ParamInt    ParamType = "int"  // int64
	ParamUint   ParamType = "uint" // uint64
)

// Scope is a way to narrow a watcher: a whole-token prefix of one or more
// key templates.
type Scope struct {
	GoName string
	// Field is the scope's field in the bucket's Scopes struct: GoName,
	// or with "_" appended where that is a member the generator defines
	// (a scope All).
	Field  string
	Prefix *Template // its params carry the types of the templates
	// Struct is the Go struct type of one value of a scope with several
	// parameters (NetworkNodeScope), "" for other scopes.
	Struct string
	Pos    Pos
}

// Type is a struct value type declared under "types".
type Type struct {
	Name   string // Go name, as written
	Doc    string
	Fields []*Field // in the order written
	// NeedsClone is set when a plain copy of a value shares memory with it:
	// a field holds a slice, a map, bytes, json or an external value,
	// directly or inside a field's struct type. Such a type gets a deep
	// copy function, Names.Clone.
	NeedsClone bool
	Names      TypeNames
	Pos        Pos
}

// TypeNames are the Go names generated for a Type.
type TypeNames struct {
	Clone string // kvwCloneRoute: its deep copy function, when NeedsClone
	// DecodeJSON is kvwDecodeRoute: its JSON fast-path decoder (see the
	// runtime's JSONReader).
	DecodeJSON string
}

// Field is one field of a Type.
type Field struct {
	JSONName string // as written
	GoName   string
	Type     *TypeRef
	Pos      Pos
}

// TypeKind classifies a TypeRef.
type TypeKind int

// The type kinds.
const (
	TypeBuiltin  TypeKind = iota + 1 // Builtin names it
	TypeSlice                        // []Elem
	TypeMap                          // map[string]Elem
	TypeNamed                        // a Type of the schema
	TypeExternal                     // ImportPath.Name
)

// TypeRef is a value or field type.
type TypeRef struct {
	Kind       TypeKind
	Builtin    string   // TypeBuiltin: one of Builtins
	Elem       *TypeRef // TypeSlice, TypeMap
	Named      *Type    // TypeNamed
	ImportPath string   // TypeExternal
	Name       string   // TypeExternal: the type's name in its package
}

// NeedsClone reports whether a plain copy of a value of type t shares
// memory with it (see Type.NeedsClone). It does not recurse: a named type
// carries its answer.
func (t *TypeRef) NeedsClone() bool {
	switch t.Kind {
	case TypeBuiltin:
		return t.Builtin == "bytes" || t.Builtin == "json"
	case TypeNamed:
		return t.Named.NeedsClone
	}
	return true // slices, maps, and external types (which may hold anything)
}

// Builtins are the builtin value types, in documentation order.
var Builtins = []string{
	"string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64",
	"float32", "float64", "bytes", "time", "duration", "json",
}

// String writes t as a schema type expression: "[]string", "Route",
// "example.com/geo.Point".
func (t *TypeRef) String() string { return typeString(t) }
