package directget

import (
	"errors"
	"slices"

	"github.com/nats-io/nats.go"
)

// This file counts without reading: how the watcher learns the share of a
// bucket its scopes hold before it chooses how to read their state. A
// batched direct get of one message ends with the number of those it
// left unsent (Nats-Num-Pending), which the server counts from its index
// of subjects: the answer is a count, and a single message.

// CountLatest returns the number of keys (subjects with a newest message)
// matching filters, by one multi_last request of a single message. More
// than MaxMultiLastSubjects keys are refused uncounted, without reading a
// message: more is then set, and n is MaxMultiLastSubjects+1.
func (d *Getter) CountLatest(filters []string) (n uint64, more bool, err error) {
	return countLatest(d, filters)
}

// CountMessages returns the number of messages of subject (a filter:
// wildcards allowed), by one request of a single message from the
// stream's start (next_by_subj): every message, not only each key's
// newest, and no cap.
func (d *Getter) CountMessages(subject string) (uint64, error) {
	return countMessages(d, subject)
}

func countLatest(g answerer, filters []string) (uint64, bool, error) {
	end, err := read(g, Request{MultiLast: filters, Batch: 1})
	switch {
	case errors.Is(err, ErrNoResults):
		return 0, false, nil
	case errors.Is(err, ErrTooManyResults):
		return MaxMultiLastSubjects + 1, true, nil
	case err != nil:
		return 0, false, err
	}
	return uint64(end.Received) + end.Pending, false, nil
}

func countMessages(g answerer, subject string) (uint64, error) {
	end, err := read(g, Request{NextBySubj: subject, Batch: 1})
	switch {
	case errors.Is(err, ErrNoResults):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return uint64(end.Received) + end.Pending, nil
}

// read sends req and receives its answer, ignoring its messages.
func read(g answerer, req Request) (BatchEnd, error) {
	p, err := g.Send(req)
	if err != nil {
		return BatchEnd{}, err
	}
	return g.Receive(p, func(*nats.Msg) {})
}

// Sample returns n of filters in runs of up to sampleRun neighbours,
// spread evenly over them (all of them when there are no more than n):
// filters are sorted, so neighbours are alike, and a scope's filters (a
// key and the keys under it, "a.b" and "a.b.>") come in runs.
func Sample(filters []string, n int) []string {
	if len(filters) <= n {
		return slices.Clone(filters)
	}
	runs := (n + sampleRun - 1) / sampleRun
	out := make([]string, 0, n)
	for i, next := 0, 0; i < runs; i++ {
		start := max(i*len(filters)/runs, next)
		next = min(start+sampleRun, start+n-len(out), len(filters))
		out = append(out, filters[start:next]...)
	}
	return out
}

// sampleRun is the length of the runs of neighbouring filters Sample
// takes.
const sampleRun = 4
