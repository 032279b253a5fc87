// Package kvclient holds what a user of a generated typed client (the
// XBucket types: Put, Create, Update, Modify, Get, History, List, Keys,
// batches, CreateOrUpdateXBucket) names besides the generated code: the
// options of Modify, of opening and of creating a bucket, and the errors
// to match.
//
// The generated client checks every key before anything is sent (a key
// field that is not a valid token is a *kvwatch.ParamError, never another
// key) and decodes every value it reads (a *kvwatch.DataError for one that
// does not decode). Its methods are safe for concurrent use.
//
// A batch (the generated XBatch) is committed as one atomic publish: a
// reader of the bucket sees all of it or none, and a watcher applies it at
// once, on the hub and on an edge's mirror alike (each message carries the
// batch's id and its position). A batch needs nats-server 2.12 or later
// and a stream that allows atomic publish (ErrBatchDisabled otherwise).
package kvclient
