package main

import (
	"context"
	"time"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/internal/benchschema"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// runGenerator times what one `go generate` costs on a 100-bucket x
// 10-kind schema: load, validate, render and format 101 files (median of
// a few runs).
func runGenerator(ctx context.Context, b *bench) error {
	src := benchschema.Large(100, 10)
	var times []float64
	for range b.pick(5, 3, 1) {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		s, err := schema.Load("kvwatch.yaml", src)
		if err != nil {
			return err
		}
		if _, err := gen.Generate(s); err != nil {
			return err
		}
		times = append(times, time.Since(start).Seconds())
	}
	b.report("generate_seconds_100_buckets_x_10_kinds", median(times), "s")
	return nil
}
