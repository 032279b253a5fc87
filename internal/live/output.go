package live

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// This file holds what every subcommand's output uses: JSON lines and
// aligned tables.

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	w.Write(append(data, '\n'))
}

// table is a tabwriter whose lines lose their trailing blanks (a last
// column left empty).
type table struct {
	*tabwriter.Writer
	buf strings.Builder
	out io.Writer
}

func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

// Flush writes the table.
func (t *table) Flush() {
	t.Writer.Flush()
	for line := range strings.Lines(t.buf.String()) {
		io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n")
	}
	t.buf.Reset()
}

// plural is n and the noun: one when n is 1, many otherwise ("1 entry",
// "2 entries").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
