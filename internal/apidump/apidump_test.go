package apidump

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

// prefix starts every API line of the package check makes.
const prefix = "pkg example.com/p, "

// check type-checks one file of package p (path example.com/p) and
// returns its API lines.
func check(t *testing.T, src string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", "package p\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("example.com/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Lines(pkg)
}

// sample has one of each thing the API lines describe.
const sample = `
import (
	"context"
	"io"
	"strings"
)

const Limit = 8
const Mode Op = 2
const Name = "a, (b)"
const unexported = 1

type Op uint8

func (o Op) String() string { return "" }
func (o *Op) Set(string) error { return nil }

var ErrX error

func New(ctx context.Context, opts ...Option) (*Client, error) { return nil, nil }
func helper() {}

type Option func(*config)
type config struct{}

type Client struct {
	Name  string
	inner int
	io.Reader
	*base
}

type base struct {
	Shared bool
	Name   int // shadowed by Client.Name
	*strings.Builder
}

func (b *base) Close() error { return nil }
func (c *Client) Do(context.Context, func(int) bool) (n int, err error) { return 0, nil }

type Set[K comparable, V any] map[K]V

func (s Set[K, V]) Get(k K) (V, bool) { v, ok := s[k]; return v, ok }

func Map[S ~[]E, E any, R any](s S, f func(E) R) []R { return nil }

type Number interface{ ~int | ~int64 }

type Store interface {
	Get(key string) ([]byte, error)
	io.Closer
}

type sealed interface{ seal() }

type Sealed interface {
	Kind() string
	sealed
}

type Alias = Set[string, int]
type Pair[A, B any] = struct{ First A; Second B }

type Point struct{ X, Y float64 }
type Chans struct {
	In  <-chan int
	Out chan<- []byte
	Odd chan (<-chan int)
	Any interface{}
}
`

func TestLines(t *testing.T) {
	want := []string{
		`const Limit untyped int = 8`,
		`const Mode Op = 2`,
		`const Name untyped string = "a, (b)"`,
		`func Map[$0 ~[]$1, $1 any, $2 any]($0, func($1) $2) []$2`,
		`func New(context.Context, ...Option) (*Client, error)`,
		`method (*Client) Do(context.Context, func(int) bool) (int, error)`,
		`method (*Op) Set(string) error`,
		`method (Client) Close() error`, // promoted through *base: values have it
		`method (Op) String() string`,
		`method (Set[$0, $1]) Get($0) ($1, bool)`,
		`type Alias = Set[string, int]`,
		`type Chans struct`,
		`type Chans struct, Any any`,
		`type Chans struct, In <-chan int`,
		`type Chans struct, Odd chan (<-chan int)`,
		`type Chans struct, Out chan<- []byte`,
		`type Client struct`,
		`type Client struct, Name string`,
		`type Client struct, embedded *strings.Builder`, // promoted through base; its methods are its own lines
		`type Client struct, Shared bool`,
		`type Client struct, embedded io.Reader`,
		`type Client struct, embedded *base`,
		`type Number interface{ ~int | ~int64 }`,
		`type Op uint8`,
		`type Option func(*config)`,
		`type Pair[$0 any, $1 any] = struct{First $0; Second $1}`,
		`type Point struct`,
		`type Point struct, X float64`,
		`type Point struct, Y float64`,
		`type Sealed interface`,
		`type Sealed interface, Kind() string`,
		`type Sealed interface, unexported methods`,
		`type Set[$0 comparable, $1 any] map[$0]$1`,
		`type Store interface { Close, Get }`,
		`type Store interface, Close() error`,
		`type Store interface, Get(string) ([]byte, error)`,
		`var ErrX error`,
	}
	slices.Sort(want)
	var got []string
	for _, l := range check(t, sample) {
		got = append(got, strings.TrimPrefix(l, prefix))
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompareClassifies changes the sample one way at a time and checks
// that each change is found, with its class.
func TestCompareClassifies(t *testing.T) {
	base := check(t, sample)
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(sample, old) {
			t.Fatalf("sample has no %q", old)
		}
		return strings.Replace(sample, old, new, 1)
	}
	cases := []struct {
		name string
		src  string
		want []string // "class: line" without the package prefix
	}{
		{"added func", sample + "func Added() {}\n",
			[]string{"added (compatible): func Added()"}},
		{"removed method", edit("func (c *Client) Do(", "func (c *Client) do("),
			[]string{"removed (breaking): method (*Client) Do(context.Context, func(int) bool) (int, error)"}},
		{"changed signature", edit("func New(ctx context.Context,", "func New(ctx context.Context, n int,"),
			[]string{"changed (breaking): func New(context.Context, int, ...Option) (*Client, error)\n    was: func New(context.Context, ...Option) (*Client, error)"}},
		{"changed struct field", edit("type Point struct{ X, Y float64 }", "type Point struct{ X, Y float32 }"),
			[]string{
				"changed (breaking): type Point struct, X float32\n    was: type Point struct, X float64",
				"changed (breaking): type Point struct, Y float32\n    was: type Point struct, Y float64",
			}},
		{"generic constraint", edit("type Set[K comparable, V any]", "type Set[K comparable, V comparable]"),
			[]string{"changed (breaking): type Set[$0 comparable, $1 comparable] map[$0]$1\n    was: type Set[$0 comparable, $1 any] map[$0]$1"}},
		{"func constraint", edit("func Map[S ~[]E,", "func Map[S []E,"),
			[]string{"changed (breaking): func Map[$0 []$1, $1 any, $2 any]($0, func($1) $2) []$2\n    was: func Map[$0 ~[]$1, $1 any, $2 any]($0, func($1) $2) []$2"}},
		{"receiver value to pointer", edit("func (o Op) String()", "func (o *Op) String()"),
			[]string{"changed (breaking): method (*Op) String() string\n    was: method (Op) String() string"}},
		{"const value", edit("const Limit = 8", "const Limit = 9"),
			[]string{"changed (breaking): const Limit untyped int = 9\n    was: const Limit untyped int = 8"}},
		{"method added to an interface", edit("io.Closer\n}", "io.Closer\n\tFlush() error\n}"),
			[]string{
				"changed (breaking): type Store interface { Close, Flush, Get }\n    was: type Store interface { Close, Get }",
				"added (compatible): type Store interface, Flush() error",
			}},
		{"method added to a sealed interface", edit("\tKind() string\n", "\tKind() string\n\tSize() int\n"),
			[]string{"added (compatible): type Sealed interface, Size() int"}},
		{"promoted method gone", edit("\t*base\n", ""),
			[]string{
				"removed (breaking): method (Client) Close() error",
				"removed (breaking): type Client struct, Shared bool",
				"removed (breaking): type Client struct, embedded *base",
				"removed (breaking): type Client struct, embedded *strings.Builder",
			}},
		{"type parameter renamed", edit("func (s Set[K, V]) Get(k K) (V, bool) { v, ok := s[k]; return v, ok }", "func (s Set[Key, Val]) Get(k Key) (Val, bool) { v, ok := s[k]; return v, ok }"),
			nil},
		{"parameter renamed", edit("func New(ctx context.Context, opts ...Option)", "func New(c context.Context, o ...Option)"),
			nil},
		{"alias spelled out", edit("type Alias = Set[string, int]", "type Alias = map[string]int"),
			[]string{"changed (breaking): type Alias = map[string]int\n    was: type Alias = Set[string, int]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, ch := range Compare(base, check(t, c.src)) {
				got = append(got, strings.ReplaceAll(ch.String(), prefix, ""))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestName(t *testing.T) {
	for line, want := range map[string]string{
		"pkg p, func F(int) error":                     "pkg p, func F",
		"pkg p, func F[$0 any, $1 any]($0) $1":         "pkg p, func F",
		"pkg p, method (*T[$0, $1]) M() string":        "pkg p, method T.M",
		"pkg p, method (T) M()":                        "pkg p, method T.M",
		"pkg p, type T[$0 any, $1 any] struct, F []$0": "pkg p, type T, F",
		"pkg p, type T struct, embedded *x.Base[$0]":   "pkg p, type T, embedded Base",
		"pkg p, type T struct, embedded Local":         "pkg p, type T, embedded Local",
		"pkg p, type I interface, M(int, bool) bool":   "pkg p, type I, M",
		"pkg p, type I interface, unexported methods":  "pkg p, type I, unexported methods",
		"pkg p, type I interface { A, B }":             "pkg p, type I",
		"pkg p, const S untyped string = \"a, b\"":     "pkg p, const S",
		"pkg p, var V map[string]int":                  "pkg p, var V",
	} {
		if got := Name(line); got != want {
			t.Errorf("Name(%q) = %q, want %q", line, got, want)
		}
	}
}
