package main

import (
	"strings"
	"sync"
)

// This file counts a storm's JetStream API requests at each server by
// kind, from a subscription on $JS.API.> in the servers' account: the
// server's own count (/jsz) says neither which requests they were nor
// includes direct gets, and a storm's cost is in which. The subscription
// adds one delivery a request to the server it counts at.

// apiKind is what a JetStream API request asks for.
type apiKind int

const (
	apiStreamInfo apiKind = iota
	apiDirectGet
	apiMsgGet
	apiConsumerCreate
	apiConsumerDelete
	apiConsumerInfo
	apiMsgNext
	apiOther
	numAPIKinds
)

// String is the kind's name in the figures' JSON names.
func (k apiKind) String() string {
	switch k {
	case apiStreamInfo:
		return "stream_info"
	case apiDirectGet:
		return "direct_get"
	case apiMsgGet:
		return "msg_get"
	case apiConsumerCreate:
		return "consumer_create"
	case apiConsumerDelete:
		return "consumer_delete"
	case apiConsumerInfo:
		return "consumer_info"
	case apiMsgNext:
		return "msg_next"
	}
	return "other"
}

// apiKindOf is the kind of the request sent to subject.
func apiKindOf(subject string) apiKind {
	rest, _ := strings.CutPrefix(subject, "$JS.API.")
	for _, p := range []struct {
		prefix string
		kind   apiKind
	}{
		{"STREAM.INFO.", apiStreamInfo},
		{"DIRECT.GET.", apiDirectGet},
		{"STREAM.MSG.GET.", apiMsgGet},
		{"CONSUMER.CREATE.", apiConsumerCreate},
		{"CONSUMER.DURABLE.CREATE.", apiConsumerCreate},
		{"CONSUMER.DELETE.", apiConsumerDelete},
		{"CONSUMER.INFO.", apiConsumerInfo},
		{"CONSUMER.MSG.NEXT.", apiMsgNext},
	} {
		if strings.HasPrefix(rest, p.prefix) {
			return p.kind
		}
	}
	return apiOther
}

// apiCounts counts requests by kind; safe for concurrent use.
type apiCounts struct {
	mu sync.Mutex
	n  [numAPIKinds]uint64
}

// count counts the request sent to subject.
func (c *apiCounts) count(subject string) {
	k := apiKindOf(subject)
	c.mu.Lock()
	c.n[k]++
	c.mu.Unlock()
}

// counts returns the counts so far, by kind.
func (c *apiCounts) counts() [numAPIKinds]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
