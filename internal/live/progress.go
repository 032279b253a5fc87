package live

import (
	"fmt"
	"io"
	"time"
)

// progress shows how far a long read is, on a terminal only: one line,
// overwritten in place, at most every 100 ms. Piped, it writes nothing.
type progress struct {
	w    io.Writer // nil: not a terminal
	what string
	last time.Time
	// shown is set while a line is on the screen.
	shown bool
}

func newProgress(env Env, what string) *progress {
	p := &progress{what: what}
	if env.Terminal {
		p.w = env.Stderr
	}
	return p
}

// update shows done of total; it is a func(done, total int) for readState.
func (p *progress) update(done, total int) {
	if p.w == nil || (done < total && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r%s: read %d of %s\x1b[K", p.what, done, plural(total, "entry", "entries"))
	p.shown = true
}

// clear removes the line, before other output or at the end.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}
