package live

import (
	"fmt"
	"time"
)

// writeDescription writes d: as one line of JSON with -json, else as text.
func writeDescription(o *options, d *description) {
	if o.json {
		writeJSONLine(o.env.Stdout, d)
		return
	}
	w := o.env.Stdout
	fmt.Fprintf(w, "bucket %s (stream %s)\n", d.Bucket, d.Stream)
	if d.Live != d.Bucket {
		fmt.Fprintf(w, "  live bucket: %s\n", d.Live)
	}
	if d.NotFound != "" {
		fmt.Fprintf(w, "  %s\n", d.NotFound)
		return
	}
	switch r := d.Recorded; {
	case r == nil:
		fmt.Fprintf(w, "  schema: none recorded (this schema: revision %s, fingerprint %s)\n", d.Schema.Revision, d.Schema.Fingerprint)
	case *r == d.Schema:
		fmt.Fprintf(w, "  schema: revision %s, fingerprint %s: this schema's\n", r.Revision, r.Fingerprint)
	default:
		fmt.Fprintf(w, "  schema: revision %s, fingerprint %s recorded; this schema is revision %s, fingerprint %s\n",
			r.Revision, r.Fingerprint, d.Schema.Revision, d.Schema.Fingerprint)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "  SETTING\tBUCKET\tSCHEMA\t")
	differ := 0
	for _, s := range d.Config {
		mark := ""
		if s.Bucket != s.Schema {
			mark, differ = "differs", differ+1
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Name, s.Bucket, s.Schema, mark)
	}
	tw.Flush()
	switch {
	case differ == 1:
		fmt.Fprintln(w, "  1 setting differs from the schema's (CreateOrUpdate…Bucket sets it)")
	case differ > 1:
		fmt.Fprintf(w, "  %d settings differ from the schema's (CreateOrUpdate…Bucket sets them)\n", differ)
	}
	fmt.Fprintf(w, "  entries: %d as of revision %d\n", d.Entries, d.Revision)
	tw = newTable(w)
	fmt.Fprintln(tw, "  KIND\tTEMPLATE\tENTRIES")
	for _, k := range d.Kinds {
		if k.Kind == "" {
			fmt.Fprintf(tw, "  (no kind)\t-\t%d\n", k.Entries)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", k.Kind, k.Template, k.Entries)
	}
	tw.Flush()
	limit := d.MaxCons
	limitText := fmt.Sprint(limit)
	if limit <= 0 {
		limit, limitText = 1000, "1000 (the server's default on nats-server 2.15+)"
	}
	fmt.Fprintf(w, "  consumers: %d of %s, %d left\n", len(d.Cons), limitText, max(limit-len(d.Cons), 0))
	if len(d.Cons) > 0 {
		tw = newTable(w)
		fmt.Fprintln(tw, "  NAME\tWATCHER\tFILTERS\tPENDING\tLAST ACTIVE")
		for _, c := range d.Cons {
			watcher, active := "no", "never"
			if c.Watcher {
				watcher = "kvwatch"
			}
			if c.LastActive != nil {
				active = time.Since(*c.LastActive).Round(time.Millisecond).String() + " ago"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\n", c.Name, watcher, c.Filters, c.Pending, active)
		}
		tw.Flush()
	}
	m := d.Mirror
	if m == nil {
		fmt.Fprintln(w, "  mirror: none (not a mirror; mirrors of it on edges are not listed here: describe them on their edge)")
		return
	}
	heard := "never"
	if m.LastHeard >= 0 {
		heard = m.LastHeard.Round(time.Millisecond).String() + " ago"
	}
	fmt.Fprintf(w, "  mirror of %s", m.Origin)
	if m.APIPrefix != "" {
		fmt.Fprintf(w, " via %s", m.APIPrefix)
	}
	fmt.Fprintf(w, ": lag %d, last heard from the origin %s", m.Lag, heard)
	if m.LastHeard > 10*time.Second || m.LastHeard < 0 {
		fmt.Fprint(w, " (stale: a healthy mirror hears from its origin every second; lag stays 0 during an outage)")
	}
	if m.Error != "" {
		fmt.Fprintf(w, ", error: %s", m.Error)
	}
	fmt.Fprintln(w)
}
